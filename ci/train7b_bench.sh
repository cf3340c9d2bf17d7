#!/usr/bin/env bash
# train7b at full scale (LLaMA 7B, batch 1 x 2048, checkpointing) on the GPU, every rung under the
# H200's own budget, so the ones whose story card would OOM run too: one record per rung with
# tokens/s, peaks, the per-tag split and (offload) the link measured in the same run.
#   usage: ci/train7b_bench.sh OUTDIR OOMLAB [steps]
set -uo pipefail
out=$1
oomlab=$2
steps=${3:-6}
mkdir -p "$out"
status=0
for variant in broken bf16-mixed 8bit-adam offload lora int8-lora; do
  echo "== $(date -u +%H:%M:%S) train7b $variant"
  "$oomlab" run train7b --variant "$variant" --device cuda --scale full --budget h200 --steps "$steps" \
    --out "$out/train7b.$variant.json" >"$out/train7b.$variant.log" 2>&1 || status=1
  tail -n 2 "$out/train7b.$variant.log"
done
exit $status
