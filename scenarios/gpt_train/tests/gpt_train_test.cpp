// The gpt_train story on host (tiny) and dry (every scale, full in milliseconds): broken runs
// out of memory with activations the largest tag; every remedy fits the same budget; the f16
// run skips its injected overflow; checkpointing and offload cut the tags they target.
#include <gtest/gtest.h>

#include "harness/memory/tags.hpp"
#include "harness/testing/run_scenario.hpp"
#include "scenarios/gpt_train/tests/oom_story_checks.hpp"
#include "scenarios/gpt_train/gpt_train.hpp"

namespace oomlab {
namespace {

using memory::Tag;
using testing::run_scenario;

const char* const kFixedVariants[] = {"half-batch", "bf16", "fp16-loss-scaling", "grad-accum",
                                      "checkpointing", "cpu-offload"};

using testing::expect_activations_named;
using Case = testing::StoryCase;


class GptTrainStory : public ::testing::TestWithParam<Case> {};

TEST_P(GptTrainStory, BrokenRunsOutOfMemoryWithActivationsTheLargestTag) {
  const auto [device, scale] = GetParam();
  const auto outcome = run_scenario("gpt_train", "broken", device, scale);
  ASSERT_TRUE(outcome.oom.has_value()) << "f32 at the full batch must not fit";
  expect_activations_named(*outcome.oom, scale);
  if (scale != Scale::tiny) {
    EXPECT_EQ(outcome.oom->diagnosis, memory::Diagnosis::capacity);
    EXPECT_EQ(outcome.oom->tag, Tag::activations);
  }
}

TEST_P(GptTrainStory, EveryRemedyFitsTheSameBudget) {
  const auto [device, scale] = GetParam();
  for (const char* variant : kFixedVariants) {
    const auto outcome = run_scenario("gpt_train", variant, device, scale);
    EXPECT_FALSE(outcome.oom.has_value()) << variant << " must fit";
    EXPECT_EQ(outcome.stats.num_ooms, 0u) << variant;
  }
}

TEST_P(GptTrainStory, Fp16SkipsTheInjectedOverflowAndHalvesTheScale) {
  const auto [device, scale] = GetParam();
  const auto outcome = run_scenario("gpt_train", "fp16-loss-scaling", device, scale);
  ASSERT_FALSE(outcome.oom.has_value());
  const float initial = scenarios::gpt_train_plan("fp16-loss-scaling", scale).options.initial_loss_scale;
  EXPECT_EQ(outcome.metrics.at("skipped_steps"), 1.0);
  EXPECT_EQ(outcome.metrics.at("final_loss_scale"), initial / 2);
}

TEST_P(GptTrainStory, CpuOffloadMovesTheOptimizerStateOffTheDevice) {
  const auto [device, scale] = GetParam();
  const auto on_device = run_scenario("gpt_train", "bf16", device, scale);
  const auto offloaded = run_scenario("gpt_train", "cpu-offload", device, scale);
  EXPECT_LT(offloaded.stats.tag(Tag::optimizer).peak, on_device.stats.tag(Tag::optimizer).peak);
  EXPECT_GT(offloaded.metrics.at("optimizer_host_bytes"), 0.0);
  EXPECT_LT(offloaded.stats.allocated.peak, on_device.stats.allocated.peak);
}

// Host tiny runs once per variant in GptTrainOnHost below (host kernels are slow).
INSTANTIATE_TEST_SUITE_P(Dry, GptTrainStory,
                         ::testing::Values(Case{DeviceKind::dry, Scale::tiny},
                                           Case{DeviceKind::dry, Scale::small},
                                           Case{DeviceKind::dry, Scale::full}),
                         testing::story_case_name);

// The plain f32 run at the full batch with no cap (dry), to compare checkpointing against.
std::int64_t unlimited_broken_activation_peak(Scale scale) {
  memory::AllocatorConfig config;
  config.budget = std::size_t{1} << 40;
  Device device(DeviceKind::dry, config);
  RunContext context(device, scale, 1);
  ScenarioRegistry::instance().find("gpt_train")->run("broken", context);
  return device.allocator().stats().tag(Tag::activations).peak;
}

TEST(GptTrainCheckpointing, PeakActivationsAtLeastTwiceLowerThanThePlainRun) {
  for (Scale scale : {Scale::small, Scale::full}) {
    const auto checkpointed = run_scenario("gpt_train", "checkpointing", DeviceKind::dry, scale);
    const std::int64_t plain = unlimited_broken_activation_peak(scale);
    EXPECT_GE(plain, 2 * checkpointed.stats.tag(Tag::activations).peak) << scale_name(scale);
  }
}

TEST(GptTrainPlans, FullScaleIsTheStory) {
  const auto broken = scenarios::gpt_train_plan("broken", Scale::full);
  EXPECT_EQ(broken.config.name, "gpt2-124m");
  EXPECT_EQ(broken.seq, 1024);
  EXPECT_EQ(broken.micro_batch, 32);
  const auto accumulated = scenarios::gpt_train_plan("grad-accum", Scale::full);
  EXPECT_EQ(accumulated.micro_batch, 8);
  EXPECT_EQ(accumulated.micro_batches, 4);
  EXPECT_THROW(scenarios::gpt_train_plan("bigger-gpu", Scale::full), std::invalid_argument);
}

// Every variant on host, once: the outcome the story expects, the same allocator events as dry
// (so the dry results above hold for host), and the numbers only host has.
TEST(GptTrainOnHost, OutcomesMatchDryEventForEventAndTheLossFalls) {
  for (const char* variant : {"broken", "half-batch", "bf16", "fp16-loss-scaling", "grad-accum",
                              "checkpointing", "cpu-offload"}) {
    const auto host = run_scenario("gpt_train", variant, DeviceKind::host, Scale::tiny);
    const auto dry = run_scenario("gpt_train", variant, DeviceKind::dry, Scale::tiny);
    EXPECT_EQ(host.oom.has_value(), std::string(variant) == "broken") << variant;
    ASSERT_EQ(host.events.size(), dry.events.size()) << variant;
    for (std::size_t i = 0; i < host.events.size(); ++i) {
      ASSERT_TRUE(host.events[i].same_as(dry.events[i])) << variant << " event " << i;
    }
    if (std::string(variant) == "fp16-loss-scaling") {
      EXPECT_EQ(host.metrics.at("skipped_steps"), 1.0);  // a real inf found by the real check
    } else if (!host.oom) {
      EXPECT_LT(host.metrics.at("last_loss"), host.metrics.at("first_loss")) << variant;
    }
  }
}

}  // namespace
}  // namespace oomlab
