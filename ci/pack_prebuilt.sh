#!/usr/bin/env bash
# Packs what ci/gpu_prebuilt.sh runs from a build folder: the stripped oomlab binary and GPU test
# programs, into .carry/prebuilt.tar.xz (xz: the GPU machine has no zstd) (xz with a long dictionary finds the kernels' fat binary that
# every program holds, so the archive stays within the device tool's carry limit).
# A second build folder's kernel GPU tests may come along (e.g. an sm_80-only build, whose
# compute_80 PTX the H200 JIT-compiles: the Ampere engines, with cuBLAS on its own Hopper code).
# OOMLAB_PACK_BENCHES=1 adds every benchmark program of BUILD_DIR (for ci/gpu.sh's bench stage
# with OOMLAB_GPU_BUILD=BUILD_DIR).
#   usage: ci/pack_prebuilt.sh BUILD_DIR [KERNEL_BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1
extra=${2:-}
kernel_tests=(kernels/core/tests/kernels_core_gpu_test kernels/conv/tests/kernels_conv_gpu_test
              kernels/attention/tests/kernels_attention_gpu_test
              kernels/transformer/tests/kernels_transformer_gpu_test)
programs=(harness/cli/oomlab scenarios/spawn/tests/spawn_gpu_test harness/cli/tests/doctor_gpu_test
          harness/cli/tests/question_gpu_test scenarios/train7b/tests/train7b_gpu_test
          harness/device/tests/device_gpu_test scenarios/models/transformer/tests/transformer_model_gpu_test
          "${kernel_tests[@]}")
if [[ ${OOMLAB_PACK_BENCHES:-0} == 1 ]]; then
  while read -r bench; do programs+=("${bench#"$build"/}"); done < <(find "$build" -type f -executable -name '*_bench' | sort)
fi
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/$build"
for program in "${programs[@]}"; do
  mkdir -p "$staging/$build/$(dirname "$program")"
  strip -o "$staging/$build/$program" "$build/$program"
done
# Google Benchmark's shared library: the GPU machine has another version (DEVICE.md). Carried
# into BUILD_DIR/.lib, which ci/gpu_prebuilt.sh and ci/gpu.sh put on LD_LIBRARY_PATH.
mkdir -p "$staging/$build/.lib"
for program in "${programs[@]}"; do ldd "$build/$program"; done | awk '/libbenchmark/ {print $3}' | sort -u |
  while read -r lib; do cp -L "$lib" "$staging/$build/.lib/"; done
printf '%s\n' "${kernel_tests[@]}" >"$staging/$build/.kernel_gpu_tests"
# The ones that run under CUDA_FORCE_PTX_JIT=1 (no cuBLAS handle: see ci/gpu_prebuilt.sh).
printf '%s\n' "${kernel_tests[@]:0:2}" >"$staging/$build/.ptx_jit_tests"
if [[ -n "$extra" ]]; then
  extra_programs=("${kernel_tests[@]}")
  if [[ ${OOMLAB_PACK_BENCHES:-0} == 1 ]]; then  # what ci/gpu.sh's sm80-bench and sm80-suite run
    extra_programs+=(harness/cli/oomlab kernels/attention/bench/attention_bench kernels/conv/bench/conv_bench
                     scenarios/gpt_train/bench/training_bench)
  fi
  for program in "${extra_programs[@]}"; do
    [[ -x "$extra/$program" ]] || continue
    mkdir -p "$staging/$extra/$(dirname "$program")"
    strip -o "$staging/$extra/$program" "$extra/$program"
    [[ $program == *_test ]] && echo "$program" >>"$staging/$extra/.kernel_gpu_tests"
  done
  echo "$PWD" >"$staging/$extra/.source_dir"
fi
echo "$PWD" >"$staging/$build/.source_dir"
# The commit the programs were built from, for their records (a configure-time commit goes stale
# with incremental builds; ci/gpu_prebuilt.sh and ci/gpu.sh export it as OOMLAB_GIT_COMMIT).
commit=$(git rev-parse HEAD)
git diff --quiet HEAD -- . ':!.carry' || commit+="-dirty"
echo "$commit" >"$staging/$build/.git_commit"
mkdir -p .carry
tar -C "$staging" -c "$build" ${extra:+"$extra"} | xz -1e --lzma2=preset=1,dict=384MiB -T1 > .carry/prebuilt.tar.xz
ls -l .carry/prebuilt.tar.xz; rm -f .carry/prebuilt.tar.zst
