// The spawn story on host and dry: broken-spawn runs out of memory with an `external` diagnosis
// whose bytes are exactly one modelled context per worker; broken-fork stops with the workers'
// CUDA failure; fixed holds one context whatever the number of workers.
#include "harness/testing/story_cases.hpp"
#include "scenarios/spawn/spawn.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/runner/run_context.hpp"

namespace oomlab::scenarios {
namespace {

struct Outcome {
  std::optional<memory::OomInfo> oom;
  std::string oom_message;
  std::optional<std::string> worker_error;
  std::map<std::string, double> metrics;
};

// One variant in this process on a fresh device with the scenario's own budget; `steps` < 0
// means the scale's default.
Outcome run_variant(const std::string& variant, DeviceKind kind, Scale scale, int steps = -1) {
  SpawnScenario scenario;
  memory::AllocatorConfig config;
  config.budget = memory::parse_budget(scenario.budget(scale)).bytes;
  scenario.configure(variant, scale, config);
  Device device(kind, config);
  RunContext context(device, scale, steps < 0 ? scenario.default_steps(scale) : steps);
  Outcome outcome;
  try {
    scenario.run(variant, context);
  } catch (const memory::OomError& error) {
    outcome.oom = error.info();
    outcome.oom_message = error.what();
  } catch (const WorkerStartError& error) {
    outcome.worker_error = error.what();
  }
  outcome.metrics = context.metrics();
  return outcome;
}

struct Case {
  DeviceKind device;
  Scale scale;
  int steps;
};

class SpawnStory : public ::testing::TestWithParam<Case> {};

TEST_P(SpawnStory, BrokenSpawnOomsExternalWithOneContextPerWorker) {
  const auto [device, scale, steps] = GetParam();
  const SpawnPlan plan = spawn_plan(scale);
  const std::size_t budget = memory::parse_budget(SpawnScenario().budget(scale)).bytes;
  const std::size_t context = modelled_context_bytes(budget);
  const Outcome outcome = run_variant("broken-spawn", device, scale, steps);
  ASSERT_TRUE(outcome.oom.has_value()) << "broken-spawn must run out of memory";
  EXPECT_EQ(outcome.oom->diagnosis, memory::Diagnosis::external) << outcome.oom_message;
  // Exactly one context per worker, nothing else, is what the allocator cannot see.
  EXPECT_EQ(outcome.oom->external, plan.workers * context);
  EXPECT_LE(outcome.oom->allocated + outcome.oom->requested, outcome.oom->budget);
  EXPECT_NE(outcome.oom_message.find("worker processes hold a CUDA context each"), std::string::npos)
      << outcome.oom_message;
  EXPECT_NE(outcome.oom_message.find("pid "), std::string::npos);
  EXPECT_EQ(outcome.metrics.at("contexts_created"), 1 + plan.workers);
  EXPECT_EQ(outcome.metrics.at("worker_context_bytes"), static_cast<double>(context));
  EXPECT_EQ(outcome.metrics.at("device_growth_from_workers_bytes"), static_cast<double>(plan.workers * context));
}

TEST_P(SpawnStory, BrokenForkStopsWithTheWorkersCudaFailure) {
  const auto [device, scale, steps] = GetParam();
  const Outcome outcome = run_variant("broken-fork", device, scale, steps);
  EXPECT_FALSE(outcome.oom.has_value());
  ASSERT_TRUE(outcome.worker_error.has_value()) << "broken-fork must fail its workers";
  EXPECT_NE(outcome.worker_error->find("first CUDA call in the forked worker failed"), std::string::npos)
      << *outcome.worker_error;
  EXPECT_NE(outcome.worker_error->find("cudaErrorInitializationError"), std::string::npos);
  EXPECT_EQ(outcome.metrics.at("forked_worker_failures"), spawn_plan(scale).workers);
  EXPECT_EQ(outcome.metrics.at("contexts_created"), 1);
}

TEST_P(SpawnStory, FixedFitsWithOneContext) {
  const auto [device, scale, steps] = GetParam();
  const Outcome outcome = run_variant("fixed", device, scale, steps);
  EXPECT_FALSE(outcome.oom.has_value()) << outcome.oom_message;
  EXPECT_FALSE(outcome.worker_error.has_value());
  EXPECT_EQ(outcome.metrics.at("contexts_created"), 1);
  EXPECT_EQ(outcome.metrics.at("external_bytes"), 0);
  EXPECT_GT(outcome.metrics.at("samples_per_second"), 0);
  for (const char* fraction : {"gpu_idle_fraction", "loader_wait_fraction"}) {
    EXPECT_GE(outcome.metrics.at(fraction), 0) << fraction;
    EXPECT_LE(outcome.metrics.at(fraction), 1) << fraction;
  }
  EXPECT_GT(outcome.metrics.at("model_parameters"), 0);
  // The loss exists where the math runs (host), not on dry; on host the denoiser learns.
  EXPECT_EQ(outcome.metrics.count("final_loss"), device == DeviceKind::host ? 1u : 0u);
  if (device == DeviceKind::host) {
    const double first = outcome.metrics.at("first_loss");
    const double last = outcome.metrics.at("final_loss");
    EXPECT_TRUE(std::isfinite(first) && std::isfinite(last));
    EXPECT_GT(first, 0);
    EXPECT_LT(last, 0.8 * first) << "loss " << first << " -> " << last;
  }
}

INSTANTIATE_TEST_SUITE_P(HostAndDry, SpawnStory,
                         ::testing::Values(Case{DeviceKind::host, Scale::tiny, -1},
                                           Case{DeviceKind::dry, Scale::tiny, -1},
                                           Case{DeviceKind::dry, Scale::small, 3},
                                           Case{DeviceKind::dry, Scale::full, 2}),
                         testing::StoryCaseName());

// fixed at every N: one context, every batch consumed.
TEST(SpawnFixed, OneContextForEveryWorkerCount) {
  for (int workers : {0, 1, 2, 4, 8}) {
    memory::AllocatorConfig config;
    config.budget = memory::parse_budget("1GiB").bytes;
    Device device(DeviceKind::host, config);
    RunContext context(device, Scale::tiny, 6);
    SpawnStoryOptions options;
    options.workers = workers;
    options.batch_size = 4;
    options.image = {40, 32, 3};
    options.model_bytes = 16 * MiB;
    const SpawnMeasurements m = run_spawn_story(options, context);
    EXPECT_EQ(m.contexts_created, 1) << workers << " workers";
    EXPECT_EQ(m.external_bytes, 0u);
    EXPECT_EQ(m.batches, 6);
    EXPECT_EQ(static_cast<int>(m.worker_pids.size()), workers);
  }
}

// The consumer is a real training step: its loss falls over the steps.
TEST(SpawnFixed, LossFallsStepByStepOnSmallImages) {
  memory::AllocatorConfig config;
  Device device(DeviceKind::host, config);
  RunContext context(device, Scale::tiny, 12);
  SpawnStoryOptions options;
  options.workers = 1;
  options.batch_size = 4;
  options.image = {40, 32, 3};
  options.model_bytes = 1 * MiB;
  options.conv_out_channels = 8;
  const SpawnMeasurements m = run_spawn_story(options, context);
  ASSERT_EQ(m.losses.size(), 12u);
  const double head = (m.losses[0] + m.losses[1] + m.losses[2]) / 3;
  const double tail = (m.losses[9] + m.losses[10] + m.losses[11]) / 3;
  EXPECT_LT(tail, 0.8 * head) << "first three " << head << ", last three " << tail;
  EXPECT_DOUBLE_EQ(m.final_loss, m.losses.back());
}

// broken-spawn's growth is exactly one modelled context per worker on host, at every N.
TEST(SpawnBroken, GrowthIsOneContextPerWorkerExactly) {
  for (int workers : {1, 2, 4}) {
    memory::AllocatorConfig config;  // no budget: measure the growth without the OOM
    Device device(DeviceKind::host, config);
    RunContext context(device, Scale::tiny, 2);
    SpawnStoryOptions options;
    options.start = WorkerStart::spawn_touching_cuda;
    options.workers = workers;
    options.batch_size = 2;
    options.image = {40, 32, 3};
    options.model_bytes = 4 * MiB;
    const SpawnMeasurements m = run_spawn_story(options, context);
    const std::size_t context_bytes = memory::find_gpu_profile("h200")->context_bytes;
    EXPECT_EQ(m.contexts_created, 1 + workers);
    EXPECT_EQ(m.device_growth_bytes, workers * context_bytes);
    EXPECT_EQ(m.memory_method, "modelled");
  }
}

TEST(SpawnScenario, UnknownVariantIsAClearError) {
  memory::AllocatorConfig config;
  Device device(DeviceKind::dry, config);
  RunContext context(device, Scale::tiny, 1);
  EXPECT_THROW(SpawnScenario().run("no-such-variant", context), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::scenarios
