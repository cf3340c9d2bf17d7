#!/usr/bin/env bash
# The GPU machine's one script: build the `cuda` preset, run every test (gpu label included),
# the GPU tests again under compute-sanitizer (memcheck, and racecheck for shared-memory
# kernels), every benchmark with JSON out, and the suite on cuda. Logs and JSON go to OUTDIR.
#   usage: ci/gpu.sh OUTDIR [stage ...]
#   stages: build test sanitize bench suite full weights (default: all but full and weights)
#   full: the conv and transformer scenarios' variants at full scale on cuda (their H200 targets)
#   weights: weights7b on the real 7B checkpoints (generates 27 + 13.5 GB on first use), warm and
#            cold page cache, and load_bench (the bf16 load per pinned-ring shape)
# Every stage runs even when an earlier one fails; the exit code says whether all passed.
set -uo pipefail
cd "$(dirname "$0")/.."
out="$(mkdir -p "$1" && cd "$1" && pwd)"; shift
stages=("$@"); ((${#stages[@]})) || stages=(build test sanitize bench suite)
want() { [[ " ${stages[*]} " == *" $1 "* ]]; }
export PATH="$PATH:/usr/local/cuda/bin"
build=build/cuda
jobs=$(nproc)
status=0
step() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$out/summary.log"; }
fail() { echo "!! FAILED: $*" | tee -a "$out/summary.log"; status=1; }

nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
# Tests and benchmarks read this: the GPU machine gets the tree without .git.
export OOMLAB_GIT_COMMIT="${OOMLAB_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"

if want build; then
  step "configure + build (cuda preset)"
  { cmake --preset cuda && cmake --build --preset cuda -j "$jobs" -- -k 0; } >"$out/build.log" 2>&1 || fail build
  tail -n 30 "$out/build.log"
fi

gpu_test_binaries() {  # test executables that contain GPU tests
  find "$build" -type f -executable -name '*_test*' ! -name '*.so' | sort | while read -r exe; do
    "$exe" --gtest_list_tests 2>/dev/null | grep -qiE 'gpu|cuda' && echo "$exe"
  done
}

if want test; then
  step "ctest (all labels)"
  ctest --test-dir "$build" -j "$jobs" --resource-spec-file "$PWD/ci/gpu-resources.json" \
    --output-on-failure --output-junit "$out/ctest-junit.xml" >"$out/ctest.log" 2>&1 || fail ctest
  tail -n 15 "$out/ctest.log"
fi

# One sanitizer pass over a test binary's GPU tests. API errors are not reported: tests that
# provoke an OOM on purpose check those themselves. Library kernels (cuBLAS's nvjet) are left
# out of racecheck: their async-copy barriers read as hazards there. A binary that never calls
# CUDA under this filter is not an error.
sanitize() {
  local tool=$1 exe=$2 name log
  name=$(basename "$exe"); log="$out/$tool-$name.log"
  step "compute-sanitizer $tool $name"
  local extra=()
  [[ $tool == memcheck ]] && extra=(--report-api-errors no --leak-check full)
  [[ $tool == racecheck ]] && extra=(--kernel-name-exclude kns=nvjet)
  compute-sanitizer --tool "$tool" --error-exitcode 99 "${extra[@]}" "$exe" \
    --gtest_filter='*Gpu*:*Cuda*:*GPU*:*CUDA*' >"$log" 2>&1
  local rc=$?
  if grep -q "terminated before first instrumented API call" "$log"; then
    echo "   (no CUDA calls under this filter)" | tee -a "$out/summary.log"
  elif ((rc == 99)); then fail "$tool $name: sanitizer errors"
  elif ((rc != 0)); then fail "$tool $name: tests failed (exit $rc)"
  fi
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1
}

if want sanitize; then
  for exe in $(gpu_test_binaries); do
    # spawn's tests orchestrate processes around kernels sanitized elsewhere; under memcheck
    # every worker start takes seconds, so they are left out.
    [[ "$(basename "$exe")" == spawn* ]] && continue
    sanitize memcheck "$exe"
    case "$(basename "$exe")" in
      *attention* | *conv* | *transformer* | *core*) sanitize racecheck "$exe" ;;
    esac
  done
fi

if want bench; then
  for exe in $(find "$build" -type f -executable -name '*_bench' | sort); do
    name=$(basename "$exe")
    # OOMLAB_BENCHES="a_bench b_bench" runs only those (a short call measures what changed).
    [[ -n "${OOMLAB_BENCHES:-}" && " $OOMLAB_BENCHES " != *" $name "* ]] && continue
    step "benchmark $name"
    # 0.1 s a benchmark: conv_bench alone has 120 (problems x dtypes x passes x ours/mma.sync/cuDNN).
    "$exe" --benchmark_out="$out/$name.json" --benchmark_out_format=json \
      --benchmark_min_time="${OOMLAB_BENCH_MIN_TIME:-0.1s}" \
      --benchmark_repetitions="${OOMLAB_BENCH_REPS:-3}" --benchmark_report_aggregates_only=true \
      >"$out/$name.log" 2>&1 || fail "benchmark $name"
    tail -n 40 "$out/$name.log"
  done
fi

if want suite; then
  step "oomlab suite (cuda small + dry full)"
  "$build/harness/cli/oomlab" suite --out-dir "$out/suite" >"$out/suite.log" 2>&1 || fail suite
  cat "$out/suite.log"
fi

# One full-scale variant on cuda, its record (with the profiled ranges) under $out/full, a time
# limit per run.
run_full() {  # scenario variant [record suffix]
  local record="$out/full/$1.$2.cuda-full${3:+.$3}.json"
  step "oomlab run $1 --variant $2 --device cuda --scale full ${3:+($3)}"
  timeout 420 "$build/harness/cli/oomlab" run "$1" --variant "$2" --device cuda --scale full \
    --profile --out "$record" >>"$out/full.log" 2>&1
  tail -n 2 "$out/full.log"
}

if want full; then  # the conv and transformer scenarios at full scale (their H200 targets)
  mkdir -p "$out/full"
  for run in "srgan_leak fixed" "srgan_leak broken" "val_blowup broken" "val_blowup fixed-inference" \
             "val_blowup fixed-chunked" "long_context broken" "long_context fixed" \
             "gpt_train broken" "gpt_train half-batch" "gpt_train bf16" "gpt_train fp16-loss-scaling" \
             "gpt_train grad-accum" "gpt_train checkpointing" "gpt_train cpu-offload"; do
    run_full $run
  done
fi

if want weights; then  # weights7b on the full 7B checkpoints: generated once, then warm and cold
  mkdir -p "$out/full"
  export OOMLAB_WEIGHTS7B_DIR="${OOMLAB_WEIGHTS7B_DIR:-/tmp/oomlab-weights7b}"
  run_full weights7b fixed generate       # writes the 27 GB f32 file on first use
  run_full weights7b fixed warm
  run_full weights7b fixed-int8 warm
  run_full weights7b broken warm
  run_full weights7b fixed-bf16-file generate
  run_full weights7b fixed-bf16-file warm
  step "load_bench: the bf16 load per pinned-ring shape"
  timeout 300 "$build/scenarios/weights7b/bench/load_bench" --dtype bf16 --slot-mib 32,16 --slots 2,3 \
    --repeats 3 --json "$out/load_bench.bf16.json" >"$out/load_bench.log" 2>&1 || fail load_bench
  tail -n 5 "$out/load_bench.log"
  sync  # dirty pages cannot be dropped: the cold runs must read from disk
  OOMLAB_WEIGHTS7B_COLD=1 run_full weights7b fixed cold
  OOMLAB_WEIGHTS7B_COLD=1 run_full weights7b fixed-bf16-file cold
  df -h "$OOMLAB_WEIGHTS7B_DIR" | tee -a "$out/summary.log"
fi

step "done, status $status"
exit $status
