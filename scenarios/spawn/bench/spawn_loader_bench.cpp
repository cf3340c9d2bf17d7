// The N sweep, on the default device (cuda when present, else host):
//  - BM_Loader: the story end to end: GPU idle and loader wait fractions, samples/s, contexts and
//    device growth for N = 0..16 workers, clean (fixed) and touching CUDA at start-up
//    (broken-spawn). One iteration = one whole run (workers started, `kSteps` batches consumed),
//    so the counters are the run's own measurements.
//  - BM_LoaderAlone: the workers' throughput with no consumer (batches released at once), to show
//    how the loader scales with N up to the core count.
//   spawn_loader_bench --benchmark_out=spawn.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>

#include "harness/memory/size.hpp"
#include "harness/process/worker.hpp"
#include "harness/runner/run_context.hpp"
#include "scenarios/spawn/loader.hpp"
#include "scenarios/spawn/spawn.hpp"

namespace oomlab::scenarios {
namespace {

constexpr int kSteps = 192;

// Worker counts up to the H200 machine's 16 cores.
void worker_counts(benchmark::internal::Benchmark* b, int from) {
  for (int n : {0, 1, 2, 4, 8, 12, 16}) {
    if (n >= from) b->Arg(n);
  }
  b->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
}

void BM_Loader(benchmark::State& state, WorkerStart start) {
  const int workers = static_cast<int>(state.range(0));
  const SpawnPlan plan = spawn_plan(Scale::tiny);
  SpawnMeasurements m;
  for (auto _ : state) {
    memory::AllocatorConfig config;  // no budget: the sweep measures, it does not fail
    Device device(default_device_kind(), config);
    RunContext context(device, Scale::tiny, kSteps);
    SpawnStoryOptions options;
    options.start = start;
    options.workers = workers;
    options.batch_size = plan.batch_size;
    options.image = plan.image;
    options.model_bytes = 64 * MiB;
    m = run_spawn_story(options, context);
  }
  state.counters["samples_per_s"] = m.samples_per_second;
  state.counters["gpu_idle_fraction"] = m.gpu_idle_fraction;
  state.counters["loader_wait_fraction"] = m.loader_wait_fraction;
  state.counters["final_loss"] = m.final_loss;
  state.counters["contexts"] = m.contexts_created;
  state.counters["device_growth_MiB"] = static_cast<double>(m.device_growth_bytes) / MiB;
  state.counters["device_used_MiB"] = static_cast<double>(m.device_used_bytes) / MiB;
  state.SetLabel(std::string(device_kind_name(default_device_kind())) + ", " + m.memory_method);
}

BENCHMARK_CAPTURE(BM_Loader, fixed, WorkerStart::spawn_clean)->Apply([](auto* b) { worker_counts(b, 0); });
BENCHMARK_CAPTURE(BM_Loader, broken_spawn, WorkerStart::spawn_touching_cuda)
    ->Apply([](auto* b) { worker_counts(b, 1); });

void BM_LoaderAlone(benchmark::State& state) {
  const SpawnPlan plan = spawn_plan(Scale::tiny);
  LoaderOptions options;
  options.device_kind = default_device_kind();
  options.workers = static_cast<int>(state.range(0));
  options.batch_size = plan.batch_size;
  options.image = plan.image;
  options.batches = kSteps;
  double seconds = 0;
  for (auto _ : state) {
    BatchLoader loader(options);  // workers started and ready before the clock starts
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < options.batches; ++i) loader.release(loader.next());
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const double samples_per_s = static_cast<double>(options.batches * options.batch_size) / seconds;
  state.counters["samples_per_s"] = samples_per_s;
  state.counters["samples_per_s_per_worker"] = samples_per_s / std::max(1, options.workers);
}
BENCHMARK(BM_LoaderAlone)->Apply([](auto* b) { worker_counts(b, 0); });

}  // namespace
}  // namespace oomlab::scenarios

// The worker check first: this benchmark re-executes itself as loader workers.
int main(int argc, char** argv) {
  int exit_code = 0;
  if (oomlab::process::run_worker_if_requested(argc, argv, exit_code)) return exit_code;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("device", oomlab::query_device_info(oomlab::default_device_kind()).name);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
