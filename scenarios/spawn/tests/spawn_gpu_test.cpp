// The spawn story on a real GPU: contexts are real, measured with NVML per process where it can
// attribute them, else as cudaMemGetInfo deltas.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/runner/run_context.hpp"
#include "harness/testing/require_gpu.hpp"
#include "scenarios/spawn/spawn.hpp"

namespace oomlab::scenarios {
namespace {

SpawnMeasurements run_on_cuda(WorkerStart start, int workers, const std::string& budget = "") {
  memory::AllocatorConfig config;
  if (!budget.empty()) config.budget = memory::parse_budget(budget).bytes;
  Device device(DeviceKind::cuda, config);
  RunContext context(device, Scale::tiny, 4);
  SpawnStoryOptions options;
  options.start = start;
  options.workers = workers;
  options.batch_size = 8;
  options.image = {80, 64, 3};
  options.model_bytes = 64 * MiB;
  return run_spawn_story(options, context);
}

TEST(SpawnGpu, FixedHoldsExactlyOneContextForEveryN) {
  OOMLAB_REQUIRE_GPU();
  const std::size_t context = memory::find_gpu_profile("h200")->context_bytes;
  for (int workers : {0, 1, 2, 4}) {
    const SpawnMeasurements m = run_on_cuda(WorkerStart::spawn_clean, workers);
    EXPECT_EQ(m.contexts_created, 1) << workers << " workers (" << m.memory_method << ")";
    EXPECT_EQ(m.external_bytes, 0u);
    // Clean workers must not move the device's used memory by anything like a context.
    EXPECT_LT(m.device_growth_bytes, context / 20) << format_size(m.device_growth_bytes);
    EXPECT_EQ(m.batches, 4);
    // The consumer trained on the GPU: a finite loss per step, falling from the first.
    ASSERT_EQ(m.losses.size(), 4u);
    EXPECT_TRUE(std::isfinite(m.final_loss));
    EXPECT_LT(m.final_loss, m.losses.front());
    EXPECT_GE(m.gpu_idle_fraction, 0);
    EXPECT_LE(m.gpu_idle_fraction, 1);
  }
}

TEST(SpawnGpu, BrokenSpawnGrowsByOneContextPerWorkerWithin5Percent) {
  OOMLAB_REQUIRE_GPU();
  const double context = static_cast<double>(memory::find_gpu_profile("h200")->context_bytes);
  for (int workers : {1, 2, 4}) {
    const SpawnMeasurements m = run_on_cuda(WorkerStart::spawn_touching_cuda, workers);
    EXPECT_EQ(m.contexts_created, 1 + workers) << m.memory_method;
    const double per_worker = static_cast<double>(m.device_growth_bytes) / workers;
    EXPECT_NEAR(per_worker, context, 0.05 * context)
        << workers << " workers: device grew " << format_size(m.device_growth_bytes);
  }
}

TEST(SpawnGpu, BrokenSpawnOomsExternalOnTheStoryBudget) {
  OOMLAB_REQUIRE_GPU();
  try {
    run_on_cuda(WorkerStart::spawn_touching_cuda, 2, "512MiB");
    FAIL() << "64 MiB + 2 real contexts must not fit 512 MiB";
  } catch (const memory::OomError& error) {
    EXPECT_EQ(error.info().diagnosis, memory::Diagnosis::external) << error.what();
    EXPECT_NE(std::string(error.what()).find("pid "), std::string::npos);
  }
}

TEST(SpawnGpu, BrokenForkChildrenFailTheirFirstCudaCall) {
  OOMLAB_REQUIRE_GPU();
  try {
    run_on_cuda(WorkerStart::fork_after_cuda, 2);
    FAIL() << "forked workers must fail";
  } catch (const WorkerStartError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("first CUDA call in the forked worker failed"), std::string::npos) << message;
    EXPECT_NE(message.find("cudaHostAlloc failed"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace oomlab::scenarios
