#!/usr/bin/env bash
# Regenerates results/advise/: `oomlab advise` on dry at full scale for every scenario's broken
# variant at its story budget (JSON for tools, the text a user reads). Deterministic: the same
# commit writes the same files. Usage: ci/advise_results.sh [path/to/oomlab]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
oomlab="${1:-$root/build/default/harness/cli/oomlab}"
out="$root/results/advise"
mkdir -p "$out"
for run in fragmentation:broken gpt_train:broken long_context:broken \
           spawn:broken-spawn srgan_leak:broken val_blowup:broken weights7b:broken train7b:broken \
           serve7b:broken-padded; do
  scenario="${run%%:*}" variant="${run#*:}"
  # advise exits 1 when no fix fits: that is an answer too.
  "$oomlab" advise "$scenario" --variant "$variant" --scale full --json > "$out/$scenario.$variant.json" || [[ $? == 1 ]]
  "$oomlab" advise "$scenario" --variant "$variant" --scale full > "$out/$scenario.$variant.txt" || [[ $? == 1 ]]
done
echo "results/advise: $(ls "$out"/*.json | wc -l) answers"
