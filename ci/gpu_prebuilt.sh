#!/usr/bin/env bash
# GPU tests from binaries built on the development machine (no build on the GPU machine: its time
# is scarce). ci/pack_prebuilt.sh packs stripped test programs of a build folder into
# .carry/prebuilt.tar.zst; the device tool carries it (`carry: [".carry"]`) and this script
# unpacks it at the same place, so the source paths compiled into the tests resolve, and runs:
#   gpu=DIR   every gpu-labelled test of a packed build folder (what `ctest -L gpu` runs there),
#             one process per program (a test that skips there again alone), one program at a
#             time: on an H200 a fat build runs its
#             sm_90a code (the Hopper engines); an sm_80-only build runs its compute_80 PTX,
#             JIT-compiled by the driver (the Ampere-class engines A100 and RTX cards run, with
#             cuBLAS on its own Hopper code)
#   ptxjit    BUILD_DIR's kernel tests that never call cuBLAS (core, conv) again with
#             CUDA_FORCE_PTX_JIT=1, which makes the driver JIT the compute_80 PTX of a fat build
#             (cuBLAS fails to start under that flag: its handle creation JITs its own kernels)
#   usage: ci/gpu_prebuilt.sh OUTDIR BUILD_DIR [stage ...]   (default: gpu=BUILD_DIR ptxjit)
set -uo pipefail
cd "$(dirname "$0")/.."
out="$(mkdir -p "$1" && cd "$1" && pwd)"
build=$2
shift 2
stages=("$@"); ((${#stages[@]})) || stages=("gpu=$build" ptxjit)
status=0
step() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$out/summary.log"; }
fail() { echo "!! FAILED: $*" | tee -a "$out/summary.log"; status=1; }
export CUDA_CACHE_MAXSIZE=$((4 << 30))  # the JIT-compiled kernels, kept for the next process

step "unpack"
tar -xJf .carry/prebuilt.tar.xz || { fail "unpack"; exit 1; }
# The tests name their source tree by the path they were built in.
src=$(cat "$build/.source_dir")
if [[ "$src" != "$PWD" && ! -e "$src" ]]; then
  mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src" || fail "link $src"
fi
export OOMLAB_GIT_COMMIT=$(cat "$build/.git_commit" 2>/dev/null || echo unknown)  # for the records
export LD_LIBRARY_PATH="$PWD/$build/.lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # see pack_prebuilt.sh
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true

run_gtest() {  # name workdir program [args...]: a gtest program with its log in $out/name.log
  local name=$1 workdir=$2; shift 2
  (cd "$workdir" && timeout 300 "$@") >"$out/$name.log" 2>&1 || fail "$name (exit $?)"
  grep -E '^\[(==========|  PASSED  |  SKIPPED |  FAILED  )\] [0-9]+ tests?' "$out/$name.log" | tee -a "$out/summary.log"
}

# A test that skipped among its program's others gets its own process, as under ctest (some need
# one without a CUDA context yet); skipping again there is its own verdict.
rerun_skipped() {  # name workdir program
  local name=$1 workdir=$2 program=$3 test
  for test in $(sed -n 's/^\[  SKIPPED \] \([A-Za-z0-9_./]*\)$/\1/p' "$out/$name.log" | sort -u); do
    step "  alone: $test"
    run_gtest "$name.${test//\//_}" "$workdir" "$program" --gtest_filter="$test"
  done
}

for stage in "${stages[@]}"; do
  case $stage in
    gpu=*)
      dir=${stage#gpu=}
      tag=$(basename "$dir")
      while IFS=$'\t' read -r program workdir filter; do
        step "$tag: $(basename "$program")"
        run_gtest "$tag.$(basename "$program")" "$dir/$workdir" "$PWD/$dir/$program" --gtest_filter="$filter"
        rerun_skipped "$tag.$(basename "$program")" "$dir/$workdir" "$PWD/$dir/$program"
      done <"$dir/.gpu_tests"
      ;;
    ptxjit)
      for program in $(cat "$build/.ptx_jit_tests"); do
        step "ptxjit: $(basename "$program") on the compute_80 PTX (Ampere engines)"
        CUDA_FORCE_PTX_JIT=1 run_gtest "ptx80.$(basename "$program")" "$build/$(dirname "$program")" "$PWD/$build/$program"
      done
      ;;
    *) fail "unknown stage $stage" ;;
  esac
done
step "done (status $status)"
exit $status
