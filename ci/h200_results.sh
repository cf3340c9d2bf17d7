#!/usr/bin/env bash
# Regenerates results/h200 from one fresh GPU run at one commit and writes the comparison of the
# main (sm_90a) build with the sm_80 build (issue 20).
#   usage: ci/h200_results.sh OUTDIR [stage ...]
# 1. on the H200: ci/gpu.sh OUTDIR with the stages (default: build test bench suite full sm80):
#    the main build's tests, benchmarks (JSON), suite (cuda small + dry full) and full-scale runs,
#    and the sm80 build's benchmarks and suite. The stage `report` alone skips this step, so the
#    run may be split over several calls of the GPU machine with the same programs (one commit:
#    ci/pack_prebuilt.sh's build folders, OOMLAB_GPU_BUILD=build/ci3), their OUTDIRs merged, and
#    the report written on any machine;
# 2. oomlab report OUTDIR -o OUTDIR/README.md: the page with its charts, then the hand-written
#    notes kept in results/h200/NOTES.md (if any) appended;
# 3. results/compare-h200-90a-vs-80.md: `oomlab compare` of each benchmark and of the suite, the
#    sm_90a build as A and the sm_80 build as B (ratios B/A; "worse" is the cost of sm_80).
# A benchmark that sm80-bench ran for both builds (OUTDIR/sm80/NAME.90a.json) and the bench stage
# did not is moved from there to OUTDIR/NAME.json: the main build's numbers of the same run, once.
# Then review `git diff`, replace results/h200 with OUTDIR and commit both.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: ci/h200_results.sh OUTDIR [stage ...]}
shift
mkdir -p "$out"
stages=("$@")
((${#stages[@]})) || stages=(build test bench suite full sm80)
status=0
if [[ "${stages[*]}" != report ]]; then
  ci/gpu.sh "$out" "${stages[@]}" || status=1
fi
oomlab=${OOMLAB_GPU_BUILD:-build/${OOMLAB_GPU_PRESET:-cuda}}/harness/cli/oomlab
[[ -x $oomlab ]] || oomlab=build/cpu/harness/cli/oomlab  # the report and compare need no GPU

for main_json in "$out"/sm80/*.90a.json; do
  [[ -f $main_json ]] || continue
  name=$(basename "$main_json" .90a.json)
  [[ -f $out/$name.json ]] || mv "$main_json" "$out/$name.json"
done

"$oomlab" report "$out" -o "$out/README.md" || status=1
if [[ -f results/h200/NOTES.md ]]; then
  { echo; echo "## Notes"; echo; cat results/h200/NOTES.md; } >>"$out/README.md"
fi

compare=results/compare-h200-90a-vs-80.md
{
  echo "# NVIDIA H200: the sm_90a build (A) against the sm_80 build (B)"
  echo
  echo "One machine; the programs of commit $(head -c 12 "$out/commit" 2>/dev/null || git rev-parse --short=12 HEAD 2>/dev/null || echo unknown),"
  echo "each benchmark's two builds timed back to back (what ran where: $out/NOTES.md or README.md)."
  echo "Written by ci/h200_results.sh with \`oomlab compare --all\`."
  for bench in training_bench attention_bench conv_bench; do
    a=$out/sm80/$bench.90a.json b=$out/sm80/$bench.sm80.json
    [[ -f $a ]] || a=$out/$bench.json
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
