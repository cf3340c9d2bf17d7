#!/usr/bin/env bash
# Builds the safetensors header fuzzer (clang: libFuzzer + ASan + UBSan, the library built with
# the sanitizers too) and runs it from the committed seed corpus for DURATION seconds.
#
#   scenarios/models/safetensors/fuzz/run_fuzz.sh [DURATION_SECONDS=600] [BUILD_DIR=build/fuzz]
#
# New inputs go to BUILD_DIR/fuzz-corpus (the committed seeds are read, never written); a
# crashing input goes to BUILD_DIR/fuzz-artifacts/ and the script exits non-zero.
# Results of a run are recorded in results/fuzz/README.md.
set -euo pipefail

duration=${1:-600}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
build=${2:-$repo/build/fuzz}
fuzz_dir=$repo/scenarios/models/safetensors/fuzz

CC=clang CXX=clang++ cmake -S "$repo" -B "$build" -G Ninja \
  -DOOMLAB_CUDA=OFF -DOOMLAB_FUZZ=ON -DOOMLAB_SANITIZE=ON -DOOMLAB_BENCHMARKS=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" >/dev/null
cmake --build "$build" --target safetensors_header_fuzz

mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts"
# Any UBSan report is a finding, not a warning; -timeout makes a hang one too.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
"$build/scenarios/models/safetensors/safetensors_header_fuzz" \
  -max_total_time="$duration" -timeout=10 -print_final_stats=1 \
  -dict="$fuzz_dir/header.dict" -artifact_prefix="$build/fuzz-artifacts/" \
  "$build/fuzz-corpus" "$fuzz_dir/corpus"
