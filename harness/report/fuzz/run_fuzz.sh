#!/usr/bin/env bash
# Builds the compare/report input fuzzer (clang: libFuzzer + ASan + UBSan, the library built with
# the sanitizers too) and runs it from small committed results for DURATION seconds.
#
#   harness/report/fuzz/run_fuzz.sh [DURATION_SECONDS=600] [BUILD_DIR=build/report-fuzz]
#
# Seeds: small committed JSON under results/ (the dry-small baselines, run records, OOM dumps as
# traces, a suite summary, Google Benchmark files). New inputs go to BUILD_DIR/fuzz-corpus (the
# results are read, never written); a crashing input goes to BUILD_DIR/fuzz-artifacts/ and the
# script exits non-zero.
set -euo pipefail
source "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)/ci/libfuzzer.sh" report-fuzz "$@"
report=$repo/harness/report

fuzz_build report_input_fuzz
mkdir -p "$build/fuzz-seeds"
seed() { for file in "$@"; do cp "$repo/$file" "$build/fuzz-seeds/$(echo "$file" | tr / _)"; done; }
seed results/baselines/dry-small/*.json
seed results/h200/full/gpt_train.bf16.cuda-full.json results/h200/full/val_blowup.broken.cuda-full.json
seed results/h200/suite/suite.json results/h200/suite/weights7b.broken.cuda-small.oom.json \
  results/h200/suite/spawn.broken-spawn.cuda-small.oom.json results/h200/suite/fragmentation.broken.cuda-small.oom.json
seed results/h200-history/attention_bench.json results/h200-history/host_path_bench.json
# Two sides of a comparison: a record, NUL, the same variant at another peak.
printf '%s\0%s' "$(cat "$repo/results/baselines/dry-small/fragmentation.broken.json")" \
  "$(sed 's/"peak_allocated": [0-9]*/"peak_allocated": 1/' "$repo/results/baselines/dry-small/fragmentation.broken.json")" \
  > "$build/fuzz-seeds/pair.json"
fuzz_run harness/report/report_input_fuzz -rss_limit_mb=2048 -max_len=65536 -dict="$report/fuzz/report.dict" \
  "$build/fuzz-corpus" "$build/fuzz-seeds"
