#!/usr/bin/env bash
# Builds the replay pickle fuzzer (clang: libFuzzer + ASan + UBSan, the library built with the
# sanitizers too) and runs it from the committed fixtures for DURATION seconds.
#
#   harness/replay/fuzz/run_fuzz.sh [DURATION_SECONDS=600] [BUILD_DIR=build/replay-fuzz]
#
# Seeds: every tests/fixtures/*.pickle (valid snapshots in protocols 2-5 and the malformed
# files). New inputs go to BUILD_DIR/fuzz-corpus (the committed fixtures are read, never
# written); a crashing input goes to BUILD_DIR/fuzz-artifacts/ and the script exits non-zero.
set -euo pipefail

duration=${1:-600}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
build=${2:-$repo/build/replay-fuzz}
replay=$repo/harness/replay

CC=clang CXX=clang++ cmake -S "$repo" -B "$build" -G Ninja \
  -DOOMLAB_CUDA=OFF -DOOMLAB_FUZZ=ON -DOOMLAB_SANITIZE=ON -DOOMLAB_BENCHMARKS=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" >/dev/null
cmake --build "$build" --target replay_pickle_fuzz

mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts" "$build/fuzz-seeds"
cp "$replay"/tests/fixtures/*.pickle "$build/fuzz-seeds/"
# Any UBSan report is a finding, not a warning; -timeout makes a hang one too.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
"$build/harness/replay/replay_pickle_fuzz" \
  -max_total_time="$duration" -timeout=10 -rss_limit_mb=2048 -max_len=262144 \
  -print_final_stats=1 \
  -dict="$replay/fuzz/pickle.dict" -artifact_prefix="$build/fuzz-artifacts/" \
  "$build/fuzz-corpus" "$build/fuzz-seeds"
