// The val_blowup story on host (tiny) and dry (tiny, small, full): broken runs out of memory in
// validation with a capacity diagnosis and `activations` the largest tag, although training fit;
// both fixes fit; and on host the fixes compute exactly what an unbounded run computes.
#include <gtest/gtest.h>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/budget.hpp"
#include "harness/memory/oom_error.hpp"
#include "harness/memory/tags.hpp"
#include "harness/runner/run_context.hpp"
#include "harness/testing/run_scenario.hpp"
#include "harness/testing/story_cases.hpp"
#include "scenarios/val_blowup/val_blowup.hpp"

namespace oomlab {
namespace {

using scenarios::ValBlowupResult;
using testing::run_scenario;

using Case = testing::StoryCase;

class ValBlowupStory : public ::testing::TestWithParam<Case> {};

// The variant on a device with the given budget (0: none), returning what run_val_blowup returns.
ValBlowupResult run_with_budget(const std::string& variant, DeviceKind kind, Scale scale, std::size_t budget) {
  const Scenario* scenario = ScenarioRegistry::instance().find("val_blowup");
  memory::AllocatorConfig config;
  if (budget != 0) config.budget = budget;
  scenario->configure(variant, scale, config);
  Device device(kind, config);
  RunContext context(device, scale, scenario->default_steps(scale));
  return scenarios::run_val_blowup(variant, context);
}

std::size_t story_budget(Scale scale) {
  return memory::parse_budget(ScenarioRegistry::instance().find("val_blowup")->budget(scale)).bytes;
}

TEST_P(ValBlowupStory, BrokenRunsOutOfMemoryInValidationWithActivationsTheLargestTag) {
  const auto [device, scale] = GetParam();
  const auto outcome = run_scenario("val_blowup", "broken", device, scale);
  ASSERT_TRUE(testing::ran_out_with(outcome, memory::Diagnosis::capacity));
  EXPECT_EQ(outcome.oom->tag, memory::Tag::activations);
  EXPECT_EQ(outcome.oom->largest_tag, memory::Tag::activations);
  // Training finished (its peak is recorded) and fit; the validation never did.
  ASSERT_EQ(outcome.metrics.count("training_peak_bytes"), 1u);
  EXPECT_LT(outcome.metrics.at("training_peak_bytes"), static_cast<double>(story_budget(scale)));
  EXPECT_EQ(outcome.metrics.count("validation_peak_bytes"), 0u);
}

TEST_P(ValBlowupStory, BothFixesFitTheSameBudget) {
  const auto [device, scale] = GetParam();
  for (const auto& [variant, outcome] :
       testing::expect_variants_fit("val_blowup", {"fixed-inference", "fixed-chunked"}, device, scale)) {
    EXPECT_LT(outcome.metrics.at("validation_peak_bytes"), static_cast<double>(story_budget(scale))) << variant;
  }
}

INSTANTIATE_TEST_SUITE_P(HostAndDry, ValBlowupStory, ::testing::ValuesIn(testing::host_tiny_and_dry_cases()),
                         testing::StoryCaseName());

TEST(ValBlowupPeaks, WithoutABudgetTheGraphKeepingValidationNeedsMoreThanTheBudget) {
  for (Scale scale : {Scale::tiny, Scale::small, Scale::full}) {
    const ValBlowupResult broken = run_with_budget("broken", DeviceKind::dry, scale, 0);
    const ValBlowupResult inference = run_with_budget("fixed-inference", DeviceKind::dry, scale, 0);
    const ValBlowupResult chunked = run_with_budget("fixed-chunked", DeviceKind::dry, scale, 0);
    const auto budget = static_cast<std::int64_t>(story_budget(scale));
    EXPECT_GT(broken.validation_peak_bytes, budget) << scale_name(scale);
    EXPECT_LT(broken.training_peak_bytes, budget) << scale_name(scale);
    // The story's order: chunked ~ training < inference < graph kept.
    EXPECT_LT(chunked.validation_peak_bytes, inference.validation_peak_bytes) << scale_name(scale);
    EXPECT_LT(inference.validation_peak_bytes, broken.validation_peak_bytes) << scale_name(scale);
  }
}

TEST(ValBlowupOutputs, FixesComputeExactlyWhatAnUnboundedRunComputes) {
  const ValBlowupResult unbounded = run_with_budget("broken", DeviceKind::host, Scale::tiny, 0);
  const auto plan = scenarios::val_blowup_plan(Scale::tiny);
  ASSERT_EQ(unbounded.validation_outputs.size(),
            static_cast<std::size_t>(plan.validation_batch) * (4 * plan.low_res_size) * (4 * plan.low_res_size) * 3);
  EXPECT_GT(unbounded.validation_l1, 0.0f);
  for (const char* variant : {"fixed-inference", "fixed-chunked"}) {
    const ValBlowupResult fixed = run_with_budget(variant, DeviceKind::host, Scale::tiny, story_budget(Scale::tiny));
    EXPECT_EQ(fixed.validation_outputs, unbounded.validation_outputs) << variant;  // bit-equal
    EXPECT_EQ(fixed.validation_l1, unbounded.validation_l1) << variant;
    EXPECT_EQ(fixed.last_train_loss, unbounded.last_train_loss) << variant;
  }
}

TEST(ValBlowupSequence, HostAndDryMakeIdenticalAllocatorEvents) {
  for (const char* variant : {"broken", "fixed-inference", "fixed-chunked"}) {
    const auto host = run_scenario("val_blowup", variant, DeviceKind::host, Scale::tiny);
    const auto dry = run_scenario("val_blowup", variant, DeviceKind::dry, Scale::tiny);
    ASSERT_EQ(host.events.size(), dry.events.size()) << variant;
    ASSERT_GT(host.events.size(), 100u) << variant;
    for (std::size_t i = 0; i < host.events.size(); ++i) {
      ASSERT_TRUE(host.events[i].same_as(dry.events[i])) << variant << ": event " << i;
    }
  }
}

// The throughput counts every image a completed step processed: the training batches and the
// validation batch; at the story's budget broken's validation step ends in the OOM and adds none.
TEST(ValBlowupWork, CountsTrainingAndValidationSamples) {
  const Scale scale = Scale::tiny;
  const scenarios::ValBlowupPlan plan = scenarios::val_blowup_plan(scale);
  const int steps = ScenarioRegistry::instance().find("val_blowup")->default_steps(scale);
  const double training = static_cast<double>(steps) * plan.train_batch;
  for (const char* variant : {"broken", "fixed-inference", "fixed-chunked"}) {
    Device device(DeviceKind::dry, {});  // no budget: every variant completes its validation
    RunContext context(device, scale, steps);
    scenarios::run_val_blowup(variant, context);
    EXPECT_EQ(context.work(), training + plan.validation_batch) << variant;
    EXPECT_EQ(context.work_unit(), "samples/s") << variant;
  }
  memory::AllocatorConfig config;
  config.budget = story_budget(scale);
  ScenarioRegistry::instance().find("val_blowup")->configure("broken", scale, config);
  Device device(DeviceKind::dry, config);
  RunContext context(device, scale, steps);
  EXPECT_THROW(scenarios::run_val_blowup("broken", context), memory::OomError);
  EXPECT_EQ(context.work(), training);
}

TEST(ValBlowup, RejectsAnUnknownVariant) {
  EXPECT_THROW(run_with_budget("fixed-nothing", DeviceKind::dry, Scale::tiny, 0), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab
