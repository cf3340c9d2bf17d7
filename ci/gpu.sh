#!/usr/bin/env bash
# The GPU machine's one script: build the main preset, run every test (gpu label included), the
# GPU tests again under compute-sanitizer (memcheck, and racecheck for shared-memory kernels),
# every benchmark with JSON out, and the suite on cuda; and the other architectures' builds
# (issue 17). Logs and JSON go to OUTDIR.
#   usage: ci/gpu.sh OUTDIR [stage ...]
#   stages: build test sanitize bench suite full sharded weights (default: the first five)
#   gate sm80-gate gate-slowed: the speed gate (ci/speed_gate.sh) of the sm90a / sm80 presets
#   full: the conv and transformer scenarios' variants at full scale on cuda (their H200 targets)
#   sharded: train7b sharded through NCCL (issue 22): its GPU tests and full-scale runs, gpus=1 and,
#            on a machine with two GPUs, gpus=2 on the story's h100-80g budget (results/h200x2/)
#   weights: weights7b on the real 7B checkpoints (generates 27 + 13.5 GB on first use), warm and
#            cold page cache, and load_bench (the bf16 load per pinned-ring shape)
#   OOMLAB_GPU_BUILD=DIR uses the programs of a build made elsewhere (no build stage).
#   OOMLAB_SANITIZE_REGEX: which sm80 kernel test programs sm80-sanitize takes (default: all four);
#   OOMLAB_SANITIZE_FILTER: the gtest filter under the sanitizer (default: every GPU test), e.g. a
#   sample of conv's 342 shapes (`Shapes/*/*0:Shapes/*/*5:GpuOps.*`), which take long under memcheck.
#   The main build is the `cuda` preset: the default architecture list (7.5 to 12.x), whose
#   sm_90a image the H200 runs; OOMLAB_GPU_PRESET=sm90a builds Hopper only (faster).
#   archs (issue 17, every GPU) = sm80 ptx80 sm75 noimage, into OUTDIR/<stage>/:
#     sm80      = sm80-build sm80-test sm80-sanitize sm80-bench sm80-suite: the A100/RTX code
#                 path (the `sm80` preset: sm_80 SASS + compute_80 PTX, which the H200 JIT-compiles)
#                 with every test, compute-sanitizer on its kernels, the suite, and
#                 training_bench / attention_bench / conv_bench beside the main build's in the
#                 same call (OUTDIR/sm80/*.ratio.md: the cost of the Hopper engines' absence)
#     ptx80     the `ptx80` preset (compute_80 PTX only): the suite on cuda (JIT path)
#     sm75      the `sm75` preset (Turing): its GPU tests and the suite on cuda; every run either
#               matches its story or ends with the capability line (ci/capability_check.py)
#     noimage   the sm80 build with PTX JIT disabled: no code for this GPU, so the start-up check
#               must print its one line (device_gpu_test) and `oomlab run --device cuda` exit 2
# Every stage runs even when an earlier one fails; the exit code says whether all passed.
set -uo pipefail
cd "$(dirname "$0")/.."
out="$(mkdir -p "$1" && cd "$1" && pwd)"; shift
stages=("$@"); ((${#stages[@]})) || stages=(build test sanitize bench suite)
expanded=()
for s in "${stages[@]}"; do
  case $s in
    archs) expanded+=(sm80-build sm80-test sm80-sanitize sm80-bench sm80-suite ptx80 sm75 noimage) ;;
    sm80) expanded+=(sm80-build sm80-test sm80-sanitize sm80-bench sm80-suite) ;;
    *) expanded+=("$s") ;;
  esac
done
stages=("${expanded[@]}")
want() { [[ " ${stages[*]} " == *" $1 "* ]]; }
export PATH="$PATH:/usr/local/cuda/bin"
preset=${OOMLAB_GPU_PRESET:-cuda}
# OOMLAB_GPU_BUILD: a build folder made elsewhere (ci/pack_prebuilt.sh with OOMLAB_PACK_BENCHES=1,
# unpacked by ci/gpu_prebuilt.sh), for the stages that need only its programs: bench suite full.
build=${OOMLAB_GPU_BUILD:-build/$preset}
[[ -f $build/.git_commit ]] && export OOMLAB_GIT_COMMIT=$(cat "$build/.git_commit")  # a prebuilt build's own
bench_min_time=0.1s
if [[ -d $build/.lib ]]; then  # the carried Google Benchmark 1.7 takes seconds as a plain number
  export LD_LIBRARY_PATH="$PWD/$build/.lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  bench_min_time=0.1
fi
jobs=$(nproc)
status=0
step() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$out/summary.log"; }
fail() { echo "!! FAILED: $*" | tee -a "$out/summary.log"; status=1; }
# Builds without SASS for this GPU JIT-compile their PTX once per module; keep every result.
export CUDA_CACHE_MAXSIZE=$((4 << 30))

nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
# Tests and benchmarks read this: the GPU machine gets the tree without .git.
export OOMLAB_GIT_COMMIT="${OOMLAB_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
echo "$OOMLAB_GIT_COMMIT" >"$out/commit"

# Configure and build a preset (all targets, or those named) into build/<preset>; log to $2.
build_preset() {  # preset log [target ...]
  local name=$1 log=$2; shift 2
  local targets=()
  (($#)) && targets=(--target "$@")
  { cmake --preset "$name" && cmake --build --preset "$name" -j "$jobs" "${targets[@]}" -- -k 0; } >"$log" 2>&1
}

# The same, unless ci/pack_prebuilt.sh brought the folder built elsewhere (it leaves .source_dir).
build_preset_unless_packed() {  # preset log [target ...]
  [[ -f build/$1/.source_dir ]] && { echo "build/$1: packed, built elsewhere" >"$2"; return 0; }
  build_preset "$@"
}

if want build; then
  step "configure + build ($preset preset)"
  build_preset "$preset" "$out/build.log" || fail build
  tail -n 30 "$out/build.log"
fi

gpu_test_binaries() {  # build dir: test executables that contain GPU tests
  find "$1" -type f -executable -name '*_test*' ! -name '*.so' | sort | while read -r exe; do
    "$exe" --gtest_list_tests 2>/dev/null | grep -qiE 'gpu|cuda' && echo "$exe"
  done
}

run_ctest() {  # build dir, output dir
  ctest --test-dir "$1" -j "$jobs" --resource-spec-file "$PWD/ci/gpu-resources.json" \
    --output-on-failure --output-junit "$2/ctest-junit.xml" >"$2/ctest.log" 2>&1
}

if want test; then
  step "ctest (all labels)"
  run_ctest "$build" "$out" || fail ctest
  tail -n 15 "$out/ctest.log"
fi

# One sanitizer pass over a test binary's GPU tests. API errors are not reported: tests that
# provoke an OOM on purpose check those themselves. Racecheck takes oomlab's kernels only (every
# one is in namespace oomlab): cuBLAS's read as hazards there (nvjet's async-copy barriers) or
# stop the tool ("failed to handle a hardware exception", its GEMM of naive attention). A binary that never calls
# CUDA under this filter is not an error.
sanitize() {  # tool exe dir [gtest filter]
  local tool=$1 exe=$2 dir=$3 filter=${4:-${OOMLAB_SANITIZE_FILTER:-*Gpu*:*Cuda*:*GPU*:*CUDA*}} name log
  name=$(basename "$exe"); log="$dir/$tool-$name.log"
  step "compute-sanitizer $tool $exe"
  local extra=()
  [[ $tool == memcheck ]] && extra=(--report-api-errors no --leak-check full)
  [[ $tool == racecheck ]] && extra=(--kernel-name kns=oomlab)
  compute-sanitizer --tool "$tool" --error-exitcode 99 "${extra[@]}" "$exe" \
    --gtest_filter="$filter" >"$log" 2>&1
  local rc=$?
  if grep -q "terminated before first instrumented API call" "$log"; then
    echo "   (no CUDA calls under this filter)" | tee -a "$out/summary.log"
  elif ((rc == 99)); then fail "$tool $name: sanitizer errors"
  elif ((rc != 0)); then fail "$tool $name: tests failed (exit $rc)"
  fi
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1
}

sanitize_build() {  # build dir, output dir, regex the binary's name must match (. for all)
  for exe in $(gpu_test_binaries "$1"); do
    # spawn's tests orchestrate processes around kernels sanitized elsewhere; under memcheck
    # every worker start takes seconds, so they are left out.
    [[ "$(basename "$exe")" == spawn* ]] && continue
    [[ "$(basename "$exe")" =~ $3 ]] || continue
    sanitize memcheck "$exe" "$2"
    case "$(basename "$exe")" in
      # Attention's tests that run naive attention call cuBLAS, whose GEMM stops racecheck ("failed
      # to handle a hardware exception") even when only oomlab's kernels are checked: the fused
      # kernels' own tests (both engines, forward and backward) are racechecked.
      *attention*) sanitize racecheck "$exe" "$2" "${OOMLAB_SANITIZE_FILTER:-*FusedMatchesCpuReference:*FusedMmaSyncBackwardMatchesCpuReference:*FusedIsRepeatable}" ;;
      *conv* | *transformer* | *core*) sanitize racecheck "$exe" "$2" ;;
    esac
  done
}

if want sanitize; then
  sanitize_build "$build" "$out" .
fi

run_bench() {  # executable, output json path
  local exe=$1 json=$2 log=${2%.json}.log
  # 0.1 s a benchmark: conv_bench alone has 120 (problems x dtypes x passes x ours/mma.sync/cuDNN).
  "$exe" --benchmark_out="$json" --benchmark_out_format=json \
    --benchmark_min_time="${OOMLAB_BENCH_MIN_TIME:-$bench_min_time}" \
    --benchmark_repetitions="${OOMLAB_BENCH_REPS:-3}" --benchmark_report_aggregates_only=true \
    ${OOMLAB_BENCH_FILTER:+--benchmark_filter="$OOMLAB_BENCH_FILTER"} >"$log" 2>&1
}

if want bench; then
  for exe in $(find "$build" -type f -executable -name '*_bench' | sort); do
    name=$(basename "$exe")
    # OOMLAB_BENCHES="a_bench b_bench" runs only those (a short call measures what changed).
    [[ -n "${OOMLAB_BENCHES:-}" && " $OOMLAB_BENCHES " != *" $name "* ]] && continue
    step "benchmark $name"
    run_bench "$exe" "$out/$name.json" || fail "benchmark $name"
    tail -n 40 "$out/$name.log"
  done
fi

if want suite; then
  step "oomlab suite (cuda small + dry full)"
  "$build/harness/cli/oomlab" suite --out-dir "$out/suite" >"$out/suite.log" 2>&1 || fail suite
  cat "$out/suite.log"
fi

# ---- issue 17: the other architectures' builds, each into $out/<stage>/ ----

sm80=build/sm80
if want sm80-build; then
  mkdir -p "$out/sm80"
  step "configure + build (sm80 preset: sm_80 SASS + compute_80 PTX, JIT-compiled here)"
  build_preset sm80 "$out/sm80/build.log" || fail "sm80 build"
  tail -n 5 "$out/sm80/build.log"
fi

if want sm80-test; then
  mkdir -p "$out/sm80"
  step "sm80: ctest (all labels)"
  run_ctest "$sm80" "$out/sm80" || fail "sm80 ctest"
  tail -n 15 "$out/sm80/ctest.log"
fi

if want sm80-sanitize; then  # the kernels' GPU tests: the code an A100 runs
  mkdir -p "$out/sm80"
  sanitize_build "$sm80" "$out/sm80" "${OOMLAB_SANITIZE_REGEX:-attention|conv|transformer|core}"
fi

if want sm80-bench; then  # the same three benchmarks from both builds, interleaved, one call
  mkdir -p "$out/sm80"
  for name in ${OOMLAB_SM80_BENCHES:-training_bench attention_bench conv_bench}; do
    main_exe=$(find "$build" -type f -executable -name "$name" | head -1)
    sm80_exe=$(find "$sm80" -type f -executable -name "$name" | head -1)
    if [[ -z $main_exe || -z $sm80_exe ]]; then fail "sm80-bench: $name not built in $build and $sm80"; continue; fi
    step "benchmark $name: $preset build (sm_90a image) then sm80 build"
    run_bench "$main_exe" "$out/sm80/$name.90a.json" || fail "benchmark $name ($preset)"
    run_bench "$sm80_exe" "$out/sm80/$name.sm80.json" || fail "benchmark $name (sm80)"
    python3 ci/bench_ratio.py "$out/sm80/$name.90a.json" "$out/sm80/$name.sm80.json" \
      >"$out/sm80/$name.ratio.md" || fail "ratio $name"
    head -n 40 "$out/sm80/$name.ratio.md"
  done
fi

if want sm80-suite; then
  mkdir -p "$out/sm80"
  step "sm80: oomlab suite (cuda small + dry full)"
  "$sm80/harness/cli/oomlab" suite --out-dir "$out/sm80/suite" >"$out/sm80/suite.log" 2>&1 || fail "sm80 suite"
  tail -n 30 "$out/sm80/suite.log"
fi

if want ptx80; then  # PTX only: every kernel JIT-compiled by the driver
  mkdir -p "$out/ptx80"
  step "configure + build (ptx80 preset: compute_80 PTX only) oomlab, device_gpu_test"
  if build_preset_unless_packed ptx80 "$out/ptx80/build.log" oomlab device_gpu_test kernels_core_gpu_test; then
    build/ptx80/harness/device/tests/device_gpu_test --gtest_filter='CudaCodeGpu.*' \
      >"$out/ptx80/device_gpu_test.log" 2>&1 || fail "ptx80 CudaCodeGpu"
    grep -E "runs|PASSED|FAILED" "$out/ptx80/device_gpu_test.log"
    step "ptx80: oomlab suite --device cuda"
    build/ptx80/harness/cli/oomlab suite --device cuda --out-dir "$out/ptx80/suite" \
      >"$out/ptx80/suite.log" 2>&1 || fail "ptx80 suite"
    tail -n 30 "$out/ptx80/suite.log"
  else
    fail "ptx80 build"; tail -n 20 "$out/ptx80/build.log"
  fi
fi

if want sm75; then  # Turing: runs, or ends with the capability line
  mkdir -p "$out/sm75"
  step "configure + build (sm75 preset: sm_75 SASS + compute_75 PTX) oomlab and two GPU tests"
  if build_preset_unless_packed sm75 "$out/sm75/build.log" oomlab device_gpu_test kernels_core_gpu_test; then
    for exe in build/sm75/harness/device/tests/device_gpu_test build/sm75/kernels/core/tests/kernels_core_gpu_test; do
      "$exe" >"$out/sm75/$(basename "$exe").log" 2>&1 || fail "sm75 $(basename "$exe")"
      grep -E "^(cuda|attention|conv|matmul)|runs .* of this binary|PASSED|FAILED" "$out/sm75/$(basename "$exe").log"
    done
    step "sm75: oomlab suite --device cuda"
    build/sm75/harness/cli/oomlab suite --device cuda --out-dir "$out/sm75/suite" >"$out/sm75/suite.log" 2>&1
    python3 ci/capability_check.py "$out/sm75/suite" | tee "$out/sm75/capability_check.txt" || fail "sm75 suite"
  else
    fail "sm75 build"; tail -n 20 "$out/sm75/build.log"
  fi
fi

if want noimage; then  # the sm80 build with its PTX JIT off: no code this GPU can run
  mkdir -p "$out/noimage"
  step "noimage: sm80 build, CUDA_DISABLE_PTX_JIT=1: the start-up line"
  # An empty JIT cache: the driver still loads kernels an earlier run JIT-compiled into the cache.
  export CUDA_CACHE_PATH=$(mktemp -d)
  CUDA_DISABLE_PTX_JIT=1 OOMLAB_EXPECT_NO_CUDA_CODE=1 "$sm80/harness/device/tests/device_gpu_test" \
    --gtest_filter='CudaCodeGpu.MissingCodeIsOneLine' >"$out/noimage/device_gpu_test.log" 2>&1 ||
    fail "noimage device_gpu_test"
  grep -E "no GPU code|PASSED|FAILED" "$out/noimage/device_gpu_test.log"
  CUDA_DISABLE_PTX_JIT=1 "$sm80/harness/cli/oomlab" run fragmentation --variant fixed-expandable --device cuda \
    >"$out/noimage/oomlab-run.log" 2>&1
  rc=$?
  echo "oomlab run exit $rc: $(head -c 400 "$out/noimage/oomlab-run.log")" | tee -a "$out/summary.log"
  if ((rc != 2)) || ! grep -q "no GPU code" "$out/noimage/oomlab-run.log"; then
    fail "noimage: oomlab run (exit $rc, wanted 2 and the start-up line)"
  fi
  unset CUDA_CACHE_PATH
fi

# ---- the speed gate (ci/speed_gate.sh, README "Speed gate"): gate = the sm90a preset's gated
# benchmarks against results/<gpu>/gate/sm90a, then the peers' tables; sm80-gate = the sm80
# preset's against results/<gpu>/gate/sm80; gate-slowed = the gate with OOMLAB_SLOW_KERNEL=attention:3,
# which passes only if the gate fails. OOMLAB_GATE_UPDATE=1 writes the baselines instead. ----
gate_build() {  # preset: the gated benchmarks (and oomlab) of build/<preset>
  build_preset_unless_packed "$1" "$out/gate-$1/build.log" training_bench attention_bench conv_bench oomlab ||
    { fail "gate: $1 build"; tail -n 20 "$out/gate-$1/build.log"; return 1; }
}
for gate_stage in gate sm80-gate gate-slowed; do
  want "$gate_stage" || continue
  gate_preset=sm90a gate_args=(--peers)
  [[ $gate_stage == sm80-gate ]] && gate_preset=sm80 gate_args=()
  [[ ${OOMLAB_GATE_UPDATE:-0} == 1 && $gate_stage != gate-slowed ]] && gate_args=(--update-baseline)
  mkdir -p "$out/gate-$gate_preset"
  step "speed gate: $gate_stage (build/$gate_preset)"
  gate_build "$gate_preset" || continue
  if [[ $gate_stage == gate-slowed ]]; then
    OOMLAB_SLOW_KERNEL=attention:3 OOMLAB_GATE_BENCHES=attention_bench \
      ci/speed_gate.sh --expect-fail "$out/gate-slowed" "build/$gate_preset" || fail "gate-slowed: the gate passed a slowed kernel"
  else
    ci/speed_gate.sh "${gate_args[@]}" "$out/gate-$gate_preset" "build/$gate_preset" || fail "speed gate $gate_preset"
  fi
done

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

if want sharded; then  # issue 22 on one GPU: train7b sharded as a world of one through NCCL
  mkdir -p "$out/sharded"
  oomlab=$build/harness/cli/oomlab
  step "train7b_gpu_test: sharded through NCCL (gpus=1; gpus=2 where two GPUs are)"
  (cd "$build/scenarios/train7b/tests" && timeout 400 ./train7b_gpu_test --gtest_filter='*Sharded*:*TwoRanks*') \
    >"$out/sharded/gpu_test.log" 2>&1 || fail "sharded gpu test"
  grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' "$out/sharded/gpu_test.log"
  for device in cuda dry; do
    step "oomlab run train7b --variant sharded --set gpus=1,batch=1 --device $device --scale full"
    timeout 300 "$oomlab" run train7b --variant sharded --set gpus=1,batch=1 --device "$device" --scale full \
      --budget h200 $([[ $device == cuda ]] && echo --profile) --out "$out/sharded/train7b.sharded.gpus1.$device-full.json" \
      >>"$out/sharded/run.log" 2>&1 || fail "sharded gpus=1 on $device"
    tail -n 1 "$out/sharded/run.log"
  done
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if ((gpus >= 2)); then  # the story at full scale, one process per GPU (results/h200x2/)
    for device in cuda dry; do
      step "oomlab run train7b --variant sharded --set gpus=2,batch=2 --device $device --scale full"
      NCCL_DEBUG=${NCCL_DEBUG:-WARN} timeout 400 "$oomlab" run train7b --variant sharded --set gpus=2,batch=2 \
        --device "$device" --scale full --budget h100-80g $([[ $device == cuda ]] && echo --profile) \
        --out "$out/sharded/train7b.sharded.gpus2.$device-full.json" >>"$out/sharded/run.log" 2>&1 ||
        fail "sharded gpus=2 on $device"
      tail -n 1 "$out/sharded/run.log"
    done
  else
    step "gpus=2 with one GPU: one line, exit 2"
    "$oomlab" run train7b --variant sharded --device cuda >"$out/sharded/gpus2.log" 2>&1
    echo "exit $?" >>"$out/sharded/gpus2.log"; cat "$out/sharded/gpus2.log"
  fi
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
