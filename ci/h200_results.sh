#!/usr/bin/env bash
# Regenerates results/h200 from one fresh GPU run at one commit and writes the comparison of the
# main (sm_90a) build with the sm_80 build (issue 20). Runs on the H200 machine; not in CI.
#   usage: ci/h200_results.sh [OUTDIR]      (default: results/h200.new)
# 1. ci/gpu.sh OUTDIR build test bench suite full sm80: the main build's tests, benchmarks (JSON),
#    suite (cuda small + dry full) and full-scale runs, and the sm80 build's benchmarks and suite;
# 2. oomlab report OUTDIR -o OUTDIR/README.md: the page with its charts, then the hand-written
#    notes kept in results/h200/NOTES.md (if any) appended;
# 3. results/compare-h200-90a-vs-80.md: `oomlab compare` of each benchmark and of the suite, the
#    sm_90a build as A and the sm_80 build as B (ratios B/A; "worse" is the cost of sm_80).
# Then review `git diff`, replace results/h200 with OUTDIR and commit both.
# With OOMLAB_GPU_BUILD=build/ci3 (programs built on the development machine and unpacked by
# ci/gpu_prebuilt.sh, the sm_80 build's beside them at build/sm80: ci/pack_prebuilt.sh build/ci3
# build/sm80 with OOMLAB_PACK_BENCHES=1) step 1 runs only what needs no build or ctest tree:
# bench suite full sm80-bench sm80-suite; the tests are ci/gpu_prebuilt.sh's.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/h200.new}
mkdir -p "$out"
if [[ -n ${OOMLAB_GPU_BUILD:-} ]]; then
  ci/gpu.sh "$out" bench suite full sm80-bench sm80-suite
else
  ci/gpu.sh "$out" build test bench suite full sm80
fi
status=$?
oomlab=${OOMLAB_GPU_BUILD:-build/${OOMLAB_GPU_PRESET:-cuda}}/harness/cli/oomlab

"$oomlab" report "$out" -o "$out/README.md" || status=1
if [[ -f results/h200/NOTES.md ]]; then
  { echo; echo "## Notes"; echo; cat results/h200/NOTES.md; } >>"$out/README.md"
fi

compare=results/compare-h200-90a-vs-80.md
{
  echo "# NVIDIA H200: the sm_90a build (A) against the sm_80 build (B)"
  echo
  echo "One machine, one commit ($(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)), both builds"
  echo "measured in the same ci/gpu.sh call. Written by ci/h200_results.sh with \`oomlab compare --all\`."
  for bench in training_bench attention_bench conv_bench; do
    a=$out/sm80/$bench.90a.json b=$out/sm80/$bench.sm80.json
    [[ -f $a && -f $b ]] || continue
    printf '\n## %s\n\n```\n' "$bench"
    "$oomlab" compare --all "$a" "$b"
    printf '```\n'
  done
  if [[ -d $out/suite && -d $out/sm80/suite ]]; then
    printf '\n## suite (cuda small, dry full)\n\n```\n'
    "$oomlab" compare --all "$out/suite" "$out/sm80/suite"
    printf '```\n'
  fi
} >"$compare"
echo "wrote $out/README.md and $compare"
exit $status
