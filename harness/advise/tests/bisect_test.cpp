// bisect's answers are checked by runs at the answer and one step past it, on dry at full scale
// (the stories' real sizes, in milliseconds).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "harness/advise/bisect.hpp"
#include "harness/memory/size.hpp"
#include "harness/testing/run_scenario.hpp"

namespace oomlab::advise {
namespace {

RunRequest dry_full(const std::string& scenario, const std::string& variant) {
  return testing::quiet_request(scenario, variant, DeviceKind::dry, Scale::full);
}

OutcomeStatus outcome_with_budget(RunRequest request, std::size_t bytes) {
  request.budget = std::to_string(bytes) + "B";
  return run_variant_in_process(request).outcome.status;
}

TEST(BisectBudget, FindsTheSmallestBudgetToOneMiB) {
  for (const auto& [scenario, variant] : {std::pair<std::string, std::string>{"gpt_train", "broken"},
                                          {"fragmentation", "broken"},
                                          {"weights7b", "fixed"}}) {
    SCOPED_TRACE(scenario + "/" + variant);
    const RunRequest base = dry_full(scenario, variant);
    const BudgetBisection b = bisect_budget(base);
    EXPECT_GE(b.smallest_fitting, b.need) << "a cap below the live bytes cannot hold them";
    EXPECT_LE(b.smallest_fitting, b.need_reserved);
    EXPECT_EQ(outcome_with_budget(base, b.smallest_fitting), OutcomeStatus::ok);
    if (b.largest_failing > 0) {
      EXPECT_LE(b.smallest_fitting - b.largest_failing, MiB);
      EXPECT_EQ(outcome_with_budget(base, b.largest_failing), OutcomeStatus::oom);
    }
    EXPECT_LT(b.probes.size(), 45u);
  }
}

TEST(BisectKnob, FindsTheLargestBatchThatFitsTheStoryBudget) {
  const RunRequest base = dry_full("gpt_train", "broken");  // batch 32 does not fit rtx4090
  const KnobBisection k = bisect_knob(base, "batch");
  EXPECT_EQ(k.start, 32);
  ASSERT_GT(k.fitting, 0);
  EXPECT_LT(k.fitting, 32);
  EXPECT_EQ(k.failing, k.fitting + 1);
  RunRequest at = base;
  at.set = {{"batch", std::to_string(k.fitting)}};
  EXPECT_EQ(run_variant_in_process(at).outcome.status, OutcomeStatus::ok);
  at.set = {{"batch", std::to_string(k.failing)}};
  EXPECT_EQ(run_variant_in_process(at).outcome.status, OutcomeStatus::oom);
}

TEST(BisectKnob, AnAccumulatedBatchMovesInWholeMicroBatches) {
  const KnobBisection k = bisect_knob(dry_full("gpt_train", "grad-accum"), "batch");
  EXPECT_EQ(k.step, 4);
  EXPECT_EQ(k.fitting % 4, 0);
  EXPECT_GE(k.fitting, 32) << "the story's grad-accum fits at batch 32";
}

TEST(BisectKnob, AFittingStartSearchesUpward) {
  RunRequest base = dry_full("gpt_train", "bf16");
  base.budget = "rtx4060ti-16g";
  const KnobBisection k = bisect_knob(base, "seq");
  EXPECT_GT(k.fitting, 1024);
  EXPECT_GT(k.failing, k.fitting);
}

// Knobs where more means less memory: bisect answered "not even 1" although 8, 16 and 32 fit.
// The answer is the smallest value that fits, and only values the scenario accepts are tried.
TEST(BisectKnob, MoreMicroBatchesNeedLessMemoryTheAnswerIsTheSmallestThatFits) {
  RunRequest base = dry_full("gpt_train", "grad-accum");
  base.budget = "rtx3060-12g";
  const KnobBisection k = bisect_knob(base, "micro_batches");
  EXPECT_TRUE(k.more_needs_less);
  ASSERT_GT(k.fitting, 0);
  RunRequest at = base;
  at.set = {{"micro_batches", std::to_string(k.fitting)}};
  EXPECT_EQ(run_variant_in_process(at).outcome.status, OutcomeStatus::ok);
  ASSERT_GT(k.failing, 0) << "micro_batches=1 (the whole batch at once) does not fit 12 GB";
  EXPECT_LT(k.failing, k.fitting);
  at.set = {{"micro_batches", std::to_string(k.failing)}};
  EXPECT_EQ(run_variant_in_process(at).outcome.status, OutcomeStatus::oom);
  for (const Probe& p : k.probes) {
    const auto value = std::stoll(p.setting.substr(p.setting.find('=') + 1));
    EXPECT_EQ(32 % value, 0) << p.setting << ": micro_batches must divide the batch of 32";
  }
}

TEST(BisectKnob, MoreShardsNeedLessMemory) {
  RunRequest base = dry_full("gpt_train", "bf16");
  base.budget = "8GiB";
  base.set = {{"shard", "true"}};
  const KnobBisection k = bisect_knob(base, "gpus");
  EXPECT_TRUE(k.more_needs_less);
  ASSERT_GT(k.fitting, 1);
  EXPECT_EQ(k.failing, k.fitting / 2) << "the accepted value below the answer (gpus must divide the batch)";
}

TEST(BisectKnob, AnUnlimitedBudgetHasNoBoundaryToFind) {
  RunRequest base = dry_full("gpt_train", "broken");
  base.budget = "unlimited";
  EXPECT_THROW(bisect_knob(base, "batch"), std::invalid_argument);
}

// lr_size takes only sizes the model accepts: bisect stepped onto a refused one and ended with
// "the run failed for another reason than memory" (exit 1).
TEST(BisectKnob, StepsOnlyOnValuesTheScenarioAccepts) {
  const KnobBisection k = bisect_knob(dry_full("srgan_leak", "broken"), "lr_size");
  EXPECT_GT(k.fitting, 0);
}

TEST(BisectKnob, OnlyWholeNumberKnobsOfTheScenario) {
  const RunRequest base = dry_full("gpt_train", "broken");
  EXPECT_THROW(bisect_knob(base, "dtype"), std::invalid_argument);
  EXPECT_THROW(bisect_knob(base, "layers"), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::advise
