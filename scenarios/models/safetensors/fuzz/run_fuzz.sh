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
source "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)/ci/libfuzzer.sh" fuzz "$@"
fuzz_dir=$repo/scenarios/models/safetensors/fuzz

fuzz_build safetensors_header_fuzz
fuzz_run scenarios/models/safetensors/safetensors_header_fuzz -dict="$fuzz_dir/header.dict" \
  "$build/fuzz-corpus" "$fuzz_dir/corpus"
