#!/usr/bin/env bash
# GPU tests from binaries built on the development machine (no build on the GPU machine: its time
# is scarce). ci/pack_prebuilt.sh packs stripped test programs of a build folder into
# .carry/prebuilt.tar.zst; the device tool carries it (`carry: [".carry"]`) and this script
# unpacks it at the same place, so the source paths compiled into the tests resolve, and runs:
#   engines   every kernel GPU test as built (sm_90a SASS on an H200: the Hopper engines), and those
#             that never call cuBLAS (core, conv) again with CUDA_FORCE_PTX_JIT=1, which makes the
#             driver JIT the compute_80 PTX: the Ampere-class engines (mma.sync, cp.async) that
#             A100 and RTX cards run. cuBLAS fails to start under that flag (its handle creation
#             JITs its own kernels): the others' Ampere engines are the sm80 stage's job
#   serial    the GPU tests that measure the whole device (spawn's contexts, doctor), the device's
#             own, bisect/advise confirming on cuda, the transformer model against its host reference,
#             and train7b's peaks against dry, one at a time
#   sm80=DIR  the kernel GPU tests of a second, sm_80-only build packed beside the first: its
#             compute_80 PTX JIT-compiled by the driver (cuBLAS keeps its own code, which
#             CUDA_FORCE_PTX_JIT would force to JIT too, and fail)
#   usage: ci/gpu_prebuilt.sh OUTDIR BUILD_DIR [stage ...]   (default: every stage)
set -uo pipefail
cd "$(dirname "$0")/.."
out="$(mkdir -p "$1" && cd "$1" && pwd)"
build=$2
shift 2
stages=("$@"); ((${#stages[@]})) || stages=(serial engines)
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

run_gtest() {  # name program [args...]: a gtest program with its log in $out/name.log
  local name=$1; shift
  timeout 240 "$@" --gtest_brief=1 >"$out/$name.log" 2>&1 || fail "$name (exit $?)"
  tail -n 3 "$out/$name.log" | tee -a "$out/summary.log"
}

for stage in "${stages[@]}"; do
  case $stage in
    serial)
      step "serial: spawn and doctor GPU tests, one at a time"
      run_gtest spawn_gpu "$build/scenarios/spawn/tests/spawn_gpu_test"
      run_gtest doctor_gpu "$build/harness/cli/tests/doctor_gpu_test"
      run_gtest device_gpu "$build/harness/device/tests/device_gpu_test"
      run_gtest question_gpu "$build/harness/cli/tests/question_gpu_test"
      run_gtest transformer_model_gpu "$build/scenarios/models/transformer/tests/transformer_model_gpu_test"
      run_gtest train7b_gpu "$build/scenarios/train7b/tests/train7b_gpu_test"
      ;;
    engines)
      for program in $(cat "$build/.kernel_gpu_tests"); do
        name=$(basename "$program")
        step "engines: $name as built (sm_90a)"
        run_gtest "$name.sm90a" "$build/$program"
        grep -qx "$program" "$build/.ptx_jit_tests" || continue
        step "engines: $name on the compute_80 PTX (Ampere engines)"
        CUDA_FORCE_PTX_JIT=1 run_gtest "$name.ptx80" "$build/$program"
      done
      ;;
    sm80=*)
      other=${stage#sm80=}
      for program in $(cat "$other/.kernel_gpu_tests"); do
        step "sm80: $(basename "$program") of the sm_80 build"
        run_gtest "$(basename "$program").sm80" "$other/$program"
      done
      ;;
    *) fail "unknown stage $stage" ;;
  esac
done
step "done (status $status)"
exit $status
