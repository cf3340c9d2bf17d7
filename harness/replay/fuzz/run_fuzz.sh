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
source "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)/ci/libfuzzer.sh" replay-fuzz "$@"
replay=$repo/harness/replay

fuzz_build replay_pickle_fuzz
mkdir -p "$build/fuzz-seeds"
cp "$replay"/tests/fixtures/*.pickle "$build/fuzz-seeds/"
fuzz_run harness/replay/replay_pickle_fuzz -rss_limit_mb=2048 -max_len=262144 -dict="$replay/fuzz/pickle.dict" \
  "$build/fuzz-corpus" "$build/fuzz-seeds"
