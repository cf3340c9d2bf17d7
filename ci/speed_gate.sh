#!/usr/bin/env bash
# The speed gate (GPU machine): runs the gated benchmarks of one build with repetitions, so each
# figure's noise is measured, and checks them against the committed baseline of that GPU and build
# (ci/speed_gate.py: `oomlab compare` reads both; a figure fails when it falls more than 3% beyond
# its noise). Any change that touches a kernel or a model runs it (README, "Speed gate").
#   usage: ci/speed_gate.sh [--update-baseline] [--peers] OUTDIR BUILD [BASELINE_DIR]
#   BUILD         a build folder with training_bench, attention_bench, conv_bench (and oomlab, or
#                 OOMLAB_GATE_OOMLAB=another build's oomlab: compare is host code)
#   BASELINE_DIR  default results/<gpu>/gate/<basename of BUILD>, e.g. results/h200/gate/sm90a
#                 (layout: results/h200/gate/README.md)
#   --update-baseline  writes this run's JSON into BASELINE_DIR instead of checking (commit them)
#   --peers       then runs ci/peers/peers.py (sections OOMLAB_PEERS, default gpt2,sdpa,conv) and
#                 prints one table per workload, ours beside the peer (OUTDIR/peers.md)
#   exit: 0 passed (or baseline written), 1 a figure fell, 2 no baseline / bad input / a bench failed
# Environment: OOMLAB_GATE_BENCHES="attention_bench" runs some (the rest are not checked);
# OOMLAB_GATE_REPS (5), OOMLAB_GATE_MIN_TIME (0.05 s a kernel repetition);
# OOMLAB_SLOW_KERNEL=attention[:N] (kernels/core/slow_kernel.hpp) launches the fused attention
# forward N times: the gate must then fail (what `--expect-fail` checks: exit 0 only if it did).
#
# The H200 call that records both builds' baselines, shows the gate failing on a slowed kernel (and
# passing again without it) and measures the peers; everything in $OUT/gate.tar.gz (about 8 min):
#   export PATH=$PATH:/usr/local/cuda/bin CUDA_CACHE_MAXSIZE=4294967296; o=/tmp/g; mkdir -p $o; t0=$SECONDS; e(){ echo "$* at $((SECONDS-t0)) s" | tee -a $o/summary.txt; }; for p in sm90a sm80; do (cmake --preset $p && cmake --build --preset $p -j16 --target training_bench attention_bench conv_bench $([ $p = sm90a ] && echo oomlab)) >$o/build-$p.log 2>&1; e "build $p exit $?"; done; ci/speed_gate.sh --update-baseline $o/sm90a build/sm90a >$o/gate-sm90a.log 2>&1; e "sm90a baseline exit $?"; OOMLAB_GATE_OOMLAB=build/sm90a/harness/cli/oomlab ci/speed_gate.sh --update-baseline $o/sm80 build/sm80 >$o/gate-sm80.log 2>&1; e "sm80 baseline exit $?"; OOMLAB_SLOW_KERNEL=attention:3 OOMLAB_GATE_BENCHES=attention_bench ci/speed_gate.sh $o/slowed build/sm90a >$o/slowed.log 2>&1; e "SLOWED gate exit $? (must be 1)"; OOMLAB_GATE_BENCHES=attention_bench ci/speed_gate.sh $o/recheck build/sm90a >$o/recheck.log 2>&1; e "unslowed recheck exit $? (should be 0)"; timeout $(( (r=500-SECONDS+t0) > 30 ? r : 30 )) python3 ci/peers/peers.py --out $o/peers.json >$o/peers.log 2>&1; e "peers exit $?"; python3 ci/peers/peer_table.py $o/peers.json $o/sm90a/json >$o/peers.md 2>&1; cp -r results/h200/gate $o/baselines; cat $o/summary.txt; grep -hE "SLOWER|FAILED|passed|exit" $o/slowed/gate.md $o/recheck/gate.md | head; cat $o/peers.md; tar -C $o -czf $OUT/gate.tar.gz .
set -uo pipefail
cd "$(dirname "$0")/.."
update=0 peers=0 expect_fail=0
while [[ ${1:-} == --* ]]; do
  case $1 in
    --update-baseline) update=1 ;;
    --peers) peers=1 ;;
    --expect-fail) expect_fail=1 ;;
    *) echo "speed_gate.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
(($# >= 2)) || { sed -n '2,20p' "$0" >&2; exit 2; }
out="$(mkdir -p "$1" && cd "$1" && pwd)"
build=$2
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | awk '{split(tolower($2), w, "-"); print w[1]}')
baseline=${3:-results/${gpu:-unknown-gpu}/gate/$(basename "$build")}
oomlab=${OOMLAB_GATE_OOMLAB:-$build/harness/cli/oomlab}
reps=${OOMLAB_GATE_REPS:-5}
min_time=${OOMLAB_GATE_MIN_TIME:-0.05}
[[ -d $build/.lib ]] && export LD_LIBRARY_PATH="$PWD/$build/.lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ||
  min_time+=s  # Google Benchmark 1.8 wants the unit; a packed build carries 1.7, which does not
export OOMLAB_GIT_COMMIT="${OOMLAB_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
export CUDA_CACHE_MAXSIZE=${CUDA_CACHE_MAXSIZE:-$((4 << 30))}  # an sm80 build's PTX, JIT-compiled once

# What is gated, per program: ours only (cuBLAS's GEMM stays as the machine's reference). Left to
# ci/gpu.sh's bench stage, for time: the offload row (the host link's, 5 s a repetition), naive
# attention, the per-pass conv rows.
declare -A filter=(
  [training_bench]='BM_Training/(gpt2_bf16_B16|gpt2_bf16_B16_ckpt|long_context_fixed)/'
  [attention_bench]='BM_(FusedAttention|CublasGemm)'
  [conv_bench]='BM_conv2d_ours/.*/pass:3'
)
benches=${OOMLAB_GATE_BENCHES:-training_bench attention_bench conv_bench}
echo "speed gate: $build (${OOMLAB_SLOW_KERNEL:+OOMLAB_SLOW_KERNEL=$OOMLAB_SLOW_KERNEL, }commit $OOMLAB_GIT_COMMIT) on ${gpu:-no GPU}, $reps repetitions; baseline $baseline"
status=0
mkdir -p "$out/json"
rm -f "$out"/json/*.json
for name in $benches; do
  exe=$(find "$build" -type f -executable -name "$name" | head -1)
  [[ -n $exe && -n ${filter[$name]:-} ]] || { echo "!! $name: not built in $build (or not gated)"; status=2; continue; }
  echo "== $(date -u +%H:%M:%S) $name --benchmark_filter='${filter[$name]}'"
  if ! "$exe" --benchmark_filter="${filter[$name]}" --benchmark_repetitions="$reps" \
      --benchmark_report_aggregates_only=true --benchmark_min_time="$min_time" \
      --benchmark_out="$out/json/$name.json" --benchmark_out_format=json >"$out/$name.log" 2>&1; then
    echo "!! $name failed:"; tail -n 20 "$out/$name.log"; status=2
  fi
done

if ((update)); then
  if ((status == 0)); then
    [[ -n ${OOMLAB_SLOW_KERNEL:-} ]] && { echo "!! refusing a baseline with OOMLAB_SLOW_KERNEL set"; exit 2; }
    mkdir -p "$baseline"
    cp "$out"/json/*.json "$baseline/"
    printf 'commit %s\nbuild %s\ndate %s\ngpu %s\nrepetitions %s\n' "$OOMLAB_GIT_COMMIT" "$build" \
      "$(date -u +%FT%TZ)" "${gpu:-unknown}" "$reps" >"$baseline/RECORDED"
    echo "baseline written: $baseline ($(ls "$baseline" | tr '\n' ' '))"
  else
    echo "!! baseline not written: a benchmark failed"
  fi
else
  if ((status == 0)); then
    partial=()
    [[ -n ${OOMLAB_GATE_BENCHES:-} ]] && partial=(--partial)
    python3 ci/speed_gate.py "$baseline" "$out/json" --oomlab "$oomlab" "${partial[@]}" | tee "$out/gate.md"
    status=${PIPESTATUS[0]}
  fi
fi

if ((peers)); then
  echo "== $(date -u +%H:%M:%S) peers (${OOMLAB_PEERS:-gpt2,sdpa,conv})"
  timeout 420 python3 ci/peers/peers.py --out "$out/peers.json" --only "${OOMLAB_PEERS:-gpt2,sdpa,conv}" \
    >"$out/peers.log" 2>&1 || echo "!! peers.py exit $? (its log: $out/peers.log)"
  python3 ci/peers/peer_table.py "$out/peers.json" "$out/json" | tee "$out/peers.md"
fi

if ((expect_fail)); then
  echo "speed gate exit $status with the slowed kernel (expected 1)"
  ((status == 1)) && exit 0 || exit 1
fi
echo "speed gate exit $status"
exit $status
