# shellcheck shell=bash
# What the run_fuzz.sh scripts share; each sources it first, naming its default build folder:
#   source "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)/ci/libfuzzer.sh" NAME "$@"
# which sets `repo`, `duration` (the script's first argument, default 600 seconds) and `build`
# (its second, default build/NAME), and defines
#   fuzz_build TARGET  configure `build` with clang (libFuzzer + ASan + UBSan, the library built
#                      with the sanitizers too), build TARGET, make fuzz-corpus and fuzz-artifacts
#   fuzz_run BINARY FLAGS... CORPUS...  run build/BINARY for `duration` seconds: new inputs go to
#                      the first corpus folder, a crashing input to fuzz-artifacts/ (and the
#                      script exits non-zero)
# (The script sets -euo pipefail before it sources this.)

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
duration=${2:-600}
build=${3:-$repo/build/$1}

fuzz_build() {
  CC=clang CXX=clang++ cmake -S "$repo" -B "$build" -G Ninja \
    -DOOMLAB_CUDA=OFF -DOOMLAB_FUZZ=ON -DOOMLAB_SANITIZE=ON -DOOMLAB_BENCHMARKS=OFF \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" >/dev/null
  cmake --build "$build" --target "$1"
  mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts"
}

fuzz_run() {
  local binary=$1
  shift
  # Any UBSan report is a finding, not a warning; -timeout makes a hang one too.
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$build/$binary" \
    -max_total_time="$duration" -timeout=10 -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/" "$@"
}
