#!/usr/bin/env bash
# The test command (README.md; .ci/run calls exactly this): install what is missing, configure,
# build and run every ctest test with the `default` preset (CUDA when nvcc exists, else CPU-only).
# GPU tests report "skipped" without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
cmake --preset default
cmake --build --preset default -j "$(nproc)"
ctest --preset default -j "$(nproc)"
