#!/usr/bin/env bash
# The test command (README.md; .ci/run calls exactly this): install what is missing, configure,
# build and run every ctest test with the `default` preset (CUDA when nvcc exists, else CPU-only).
# GPU tests report "skipped" without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
# Without a GPU the CUDA code can only be compiled, not run: compile one architecture of each code
# path (7.5: no bf16 tensor cores; 8.0: the mma.sync/cp.async engines; 9.0a: Hopper's) instead of
# the whole default list, which takes 2-3x as long on a small machine. A GPU machine, or a list
# given in $CUDAARCHS, builds what it says.
if ! nvidia-smi -L >/dev/null 2>&1 && [[ -z "${CUDAARCHS:-}" ]]; then
  export CUDAARCHS="75-real;80;90a-real"
fi
cmake --preset default
cmake --build --preset default -j "$(nproc)"
ctest --preset default -j "$(nproc)"
