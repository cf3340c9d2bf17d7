// The transformer training targets of issue 4 on the GPU (Google Benchmark, one iteration = one
// run of kSteps optimizer steps on a fresh device with no budget):
//  - gpt2_bf16_B16      GPT-2 124M, T=1024, B=16, bf16 mixed precision, fused attention
//                       (PyTorch 2.11 on an H200: eager 345K tokens/s at 16.9 GB peak,
//                       torch.compile 493K tokens/s at 9.8 GB)
//  - gpt2_bf16_B16_ckpt the same with activation checkpointing (PyTorch: -16% throughput)
//  - gpt2_bf16_B16_offload the same with AdamW state in pinned host memory, streamed
//  - long_context_fixed GPT-2 124M, T=4096, B=4, bf16, fused attention (PyTorch SDPA: 297K tokens/s)
// Counters: tokens/s (median step after the first, which tunes cuBLASLt and warms the caches),
// step ms, peak allocated and reserved bytes (GB, 1e9, as PyTorch prints them), and the device
// time per step of each profiled range of the model and trainer ("ms.bwd.attention", ...).
//   training_bench --benchmark_out=training.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/device/op_profiler.hpp"
#include "harness/runner/run_context.hpp"
#include "scenarios/gpt_train/gpt_train.hpp"
#include "scenarios/common/training_loop.hpp"
#include "scenarios/long_context/long_context.hpp"

namespace oomlab::scenarios {
namespace {

constexpr int kSteps = 8;

double median_after_first(std::vector<double> seconds) {
  if (seconds.size() > 1) seconds.erase(seconds.begin());
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

void BM_Training(benchmark::State& state, TrainingPlan plan) {
  const double tokens_per_step = double(plan.seq * plan.micro_batch * plan.micro_batches);
  double step_seconds = 0;
  memory::MemoryStats stats;
  std::vector<OpProfiler::Total> profile;
  for (auto _ : state) {
    Device device(DeviceKind::cuda, memory::AllocatorConfig{});  // no budget: measure, not fail
    RunContext context(device, Scale::full, kSteps);
    OpProfiler profiler(device);
    // The first step tunes cuBLASLt and fills the caches: its ranges are left out.
    context.set_progress([](void* user, const RunContext& ran) {
      if (ran.step_seconds().size() == 1) static_cast<OpProfiler*>(user)->reset();
    }, &profiler);
    run_training(plan, context);
    step_seconds = median_after_first(context.step_seconds());
    stats = device.allocator().stats();
    profile = profiler.totals();
    state.SetIterationTime(step_seconds * kSteps);
  }
  // Device time per step by range (ms); nested ranges are included in their parents.
  for (const OpProfiler::Total& total : profile) {
    state.counters["ms." + total.name] = total.milliseconds / (kSteps - 1);
  }
  state.counters["tokens_per_s"] = tokens_per_step / step_seconds;
  state.counters["step_ms"] = step_seconds * 1e3;
  state.counters["peak_allocated_GB"] = double(stats.allocated.peak) / 1e9;
  state.counters["peak_reserved_GB"] = double(stats.reserved.peak) / 1e9;
  state.counters["activations_peak_GB"] = double(stats.tag(memory::Tag::activations).peak) / 1e9;
}

TrainingPlan gpt2_bf16_b16(bool checkpointing, bool offload = false) {
  TrainingPlan plan = gpt_train_plan("bf16", Scale::full);
  plan.micro_batch = 16;
  plan.options.checkpointing = checkpointing;
  plan.options.offload_optimizer = offload;
  return plan;
}

BENCHMARK_CAPTURE(BM_Training, gpt2_bf16_B16, gpt2_bf16_b16(false))
    ->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Training, gpt2_bf16_B16_ckpt, gpt2_bf16_b16(true))
    ->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Training, gpt2_bf16_B16_offload, gpt2_bf16_b16(false, true))
    ->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Training, long_context_fixed, long_context_plan("fixed", Scale::full))
    ->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace oomlab::scenarios

int main(int argc, char** argv) {
  if (!oomlab::cuda_available()) {
    std::fprintf(stderr, "training_bench: no usable CUDA device (%s)\n", oomlab::cuda_unavailable_reason().c_str());
    return 2;
  }
  benchmark::AddCustomContext("gpu", oomlab::query_device_info(oomlab::DeviceKind::cuda).name);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
