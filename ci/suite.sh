#!/usr/bin/env bash
# The main job (README.md): build if needed, then run every scenario's variants — on the GPU at
# small scale plus dry at full scale when a GPU is present, else host at tiny scale plus dry at
# full scale. Results land in ${1:-results/latest}; exit 0 iff every outcome matches its story.
set -euo pipefail
cd "$(dirname "$0")/.."
out_dir="${1:-results/latest}"
bash ci/install-deps.sh
export PATH="$PATH:/usr/local/cuda/bin"
if [[ ! -x build/default/harness/cli/oomlab ]]; then
  cmake --preset default
fi
cmake --build --preset default -j "$(nproc)" --target oomlab
build/default/harness/cli/oomlab suite --out-dir "$out_dir"
