#!/usr/bin/env bash
# Packs what ci/gpu_prebuilt.sh runs from a build folder: the stripped oomlab binary and every
# program with gpu-labelled tests, into .carry/prebuilt.tar.xz (xz: the GPU machine has no zstd;
# a long dictionary finds the kernels' fat binary that every program holds, so the archive stays
# within the device tool's carry limit).
# More build folders come along the same way (e.g. an sm_80-only build, whose compute_80 PTX
# the H200 JIT-compiles: the Ampere engines, with cuBLAS on its own Hopper code; or the ptx80 and
# sm75 presets' oomlab for ci/gpu.sh's ptx80 and sm75 stages). OOMLAB_PACK_BENCHES=1 adds every
# benchmark program (for ci/gpu.sh's bench stages with OOMLAB_GPU_BUILD=BUILD_DIR).
# OOMLAB_PACK_PROGRAMS="harness/cli/oomlab scenarios/x/tests/x_gpu_test" packs only those programs.
#   usage: ci/pack_prebuilt.sh BUILD_DIR [MORE_BUILD_DIR ...]   (the first: the records' commit)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1
# What a build folder contributes: the oomlab binary, every program with gpu-labelled tests (and
# the list of those tests, ci/gpu_test_list.py), and with OOMLAB_PACK_BENCHES=1 its benchmarks.
pack_build() {  # dir
  local dir=$1 program line
  local programs=(harness/cli/oomlab)
  # Only the programs this folder has built (a partial build packs what it has).
  python3 ci/gpu_test_list.py "$dir" | while IFS= read -r line; do
    [[ -x "$dir/${line%%$'\t'*}" ]] && echo "$line"
  done >"$staging/.gpu_tests"
  if [[ -n ${OOMLAB_PACK_PROGRAMS:-} ]]; then  # only these (a short call carries what changed)
    read -ra programs <<<"$OOMLAB_PACK_PROGRAMS"
    awk -F'\t' -v keep=" $OOMLAB_PACK_PROGRAMS " 'index(keep, " " $1 " ")' "$staging/.gpu_tests" >"$staging/.kept"
    mv "$staging/.kept" "$staging/.gpu_tests"
  else
    while IFS=$'\t' read -r program _; do programs+=("$program"); done <"$staging/.gpu_tests"
  fi
  if [[ ${OOMLAB_PACK_BENCHES:-0} == 1 ]]; then
    while read -r program; do programs+=("${program#"$dir"/}"); done < <(find "$dir" -type f -executable -name '*_bench' | sort)
  fi
  mkdir -p "$staging/$dir/.lib"
  mv "$staging/.gpu_tests" "$staging/$dir/.gpu_tests"
  for program in "${programs[@]}"; do
    mkdir -p "$staging/$dir/$(dirname "$program")"
    strip -o "$staging/$dir/$program" "$dir/$program"
    # Google Benchmark's shared library: the GPU machine has another version (DEVICE.md). Carried
    # into DIR/.lib, which ci/gpu_prebuilt.sh and ci/gpu.sh put on LD_LIBRARY_PATH.
    ldd "$dir/$program" | awk '/libbenchmark/ {print $3}' | while read -r lib; do cp -L "$lib" "$staging/$dir/.lib/"; done
  done
  echo "$PWD" >"$staging/$dir/.source_dir"
}
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
for dir in "$@"; do pack_build "$dir"; done
# The kernel tests that never create a cuBLAS handle, which CUDA_FORCE_PTX_JIT=1 would break:
# ci/gpu_prebuilt.sh's ptxjit stage reruns them on the compute_80 PTX.
printf '%s\n' kernels/core/tests/kernels_core_gpu_test kernels/conv/tests/kernels_conv_gpu_test >"$staging/$build/.ptx_jit_tests"
# The commit the programs were built from, for their records (a configure-time commit goes stale
# with incremental builds; ci/gpu_prebuilt.sh and ci/gpu.sh export it as OOMLAB_GIT_COMMIT).
commit=$(git rev-parse HEAD)
git diff --quiet HEAD -- . ':!.carry' || commit+="-dirty"
echo "$commit" >"$staging/$build/.git_commit"
mkdir -p .carry
tar -C "$staging" -c "$@" | xz -1e --lzma2=preset=1,dict=384MiB -T1 > .carry/prebuilt.tar.xz
ls -l .carry/prebuilt.tar.xz; rm -f .carry/prebuilt.tar.zst
