// The N sweep: loader throughput, GPU idle and loader wait fractions, contexts and device growth for
// N = 0, 1, 2, 4, 8 workers, clean (fixed) and touching CUDA at start-up (broken-spawn), on the
// default device (cuda when present, else host). One iteration = one whole run (workers started,
// `kSteps` batches consumed), so the counters are the run's own measurements.
//   spawn_loader_bench --benchmark_out=spawn.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include "harness/memory/size.hpp"
#include "harness/process/worker.hpp"
#include "harness/runner/run_context.hpp"
#include "scenarios/spawn/spawn.hpp"

namespace oomlab::scenarios {
namespace {

constexpr int kSteps = 48;

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

BENCHMARK_CAPTURE(BM_Loader, fixed, WorkerStart::spawn_clean)
    ->Arg(0)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Loader, broken_spawn, WorkerStart::spawn_touching_cuda)
    ->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

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
