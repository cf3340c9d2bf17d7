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

duration=${1:-600}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
build=${2:-$repo/build/report-fuzz}
report=$repo/harness/report

CC=clang CXX=clang++ cmake -S "$repo" -B "$build" -G Ninja \
  -DOOMLAB_CUDA=OFF -DOOMLAB_FUZZ=ON -DOOMLAB_SANITIZE=ON -DOOMLAB_BENCHMARKS=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" >/dev/null
cmake --build "$build" --target report_input_fuzz

mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts" "$build/fuzz-seeds"
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
# Any UBSan report is a finding, not a warning; -timeout makes a hang one too.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
"$build/harness/report/report_input_fuzz" \
  -max_total_time="$duration" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -dict="$report/fuzz/report.dict" -artifact_prefix="$build/fuzz-artifacts/" \
  "$build/fuzz-corpus" "$build/fuzz-seeds"
