// advise on each story's failing run at its story budget, on dry at full scale: the tree sends a
// leak to its site, fragmentation to the allocator settings, a training run through its ladder,
// and every suggested fix is a run that fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "harness/advise/advise.hpp"

namespace oomlab::advise {
namespace {

RunRequest story(const std::string& scenario, const std::string& variant) {
  RunRequest request;
  request.scenario = scenario;
  request.variant = variant;
  request.device = DeviceKind::dry;
  request.scale = Scale::full;
  request.progress = false;
  request.quiet = true;
  return request;
}

const Candidate* find_step(const Advice& advice, const std::string& prefix) {
  for (const Candidate& c : advice.candidates) {
    if (c.step.rfind(prefix, 0) == 0) return &c;
  }
  return nullptr;
}

void expect_best_is_a_fitting_run(const Advice& advice) {
  ASSERT_TRUE(advice.best.has_value());
  const Candidate& best = advice.candidates[*advice.best];
  EXPECT_TRUE(best.fits);
  RunRequest check = best.request;
  check.plan_need = false;
  EXPECT_EQ(run_variant_in_process(check).outcome.status, OutcomeStatus::ok) << best.change;
  for (const Candidate& c : advice.candidates) {
    if (c.fits) EXPECT_LE(best.rank, c.rank) << best.step << " vs " << c.step;
  }
}

TEST(Advise, ATrainingRunWalksTheLadderAndTheCheapestFixFits) {
  const Advice advice = advise(story("gpt_train", "broken"));
  EXPECT_EQ(advice.as_given.outcome.status, OutcomeStatus::oom);
  EXPECT_EQ(advice.as_given.outcome.diagnosis, "capacity");
  EXPECT_FALSE(advice.stop_at_diagnosis);
  expect_best_is_a_fitting_run(advice);
  for (const char* step : {"bf16 mixed precision", "activation checkpointing", "gradient accumulation",
                           "smaller batch", "expandable segments"}) {
    EXPECT_NE(find_step(advice, step), nullptr) << step;
  }
  const Candidate* batch = find_step(advice, "smaller batch");
  ASSERT_NE(batch, nullptr);
  EXPECT_TRUE(batch->fits);
  EXPECT_NE(batch->change.find("--set batch="), std::string::npos) << batch->change;
}

TEST(Advise, NeverSuggestsWhatIsAlreadyOn) {
  RunRequest bf16 = story("gpt_train", "bf16");
  bf16.budget = "rtx4060ti-8g";
  bf16.alloc_conf = "expandable_segments:true";
  const Advice advice = advise(bf16);
  EXPECT_EQ(find_step(advice, "bf16 mixed precision"), nullptr);
  EXPECT_EQ(find_step(advice, "fused (flash) attention"), nullptr);
  EXPECT_EQ(find_step(advice, "expandable segments"), nullptr);
}

TEST(Advise, ALeakIsSentToItsSiteNotToASmallerBatch) {
  const Advice advice = advise(story("srgan_leak", "broken"));
  EXPECT_EQ(advice.as_given.outcome.diagnosis, "leak");
  EXPECT_TRUE(advice.stop_at_diagnosis);
  EXPECT_TRUE(advice.candidates.empty());
  EXPECT_FALSE(advice.best.has_value());
  const bool names_site = std::any_of(advice.path.begin(), advice.path.end(), [](const std::string& line) {
    return line.find("epoch_stats") != std::string::npos;
  });
  EXPECT_TRUE(names_site) << "the leak's site must be named";
}

TEST(Advise, FragmentationTriesTheAllocatorSettingsFirst) {
  const Advice advice = advise(story("fragmentation", "broken"));
  EXPECT_EQ(advice.as_given.outcome.diagnosis, "fragmentation");
  expect_best_is_a_fitting_run(advice);
  EXPECT_EQ(advice.candidates[*advice.best].rank, 0) << advice.candidates[*advice.best].step;
}

TEST(Advise, AValidationBlowupIsOfferedASmallerValidationBatch) {
  const Advice advice = advise(story("val_blowup", "broken"));
  expect_best_is_a_fitting_run(advice);
  const Candidate* validation = find_step(advice, "smaller validation batch");
  ASSERT_NE(validation, nullptr);
  EXPECT_TRUE(validation->fits);
  EXPECT_NE(find_step(advice, "the scenario's remedy fixed-inference"), nullptr);
}

TEST(Advise, ALoadThatDoesNotFitTakesTheScenariosOwnRemedies) {
  const Advice advice = advise(story("weights7b", "broken"));
  expect_best_is_a_fitting_run(advice);
  EXPECT_NE(advice.candidates[*advice.best].step.find("the scenario's remedy"), std::string::npos);
}

// Serving 16 users on a 24 GB card: cutting the prompts is the fastest fix measured on the H200,
// but it changes the answers; the paged cache keeps them and fits, so advise takes a fix that
// keeps them. The paged pool sizes itself to the card: its need is its peak there, not the
// larger pool it would take with no cap.
TEST(Advise, AFixThatChangesTheAnswersIsNotTakenWhileOneThatKeepsThemFits) {
  AdviseOptions options;
  options.results_dir = std::string(OOMLAB_SOURCE_DIR) + "/results/h200";
  const Advice advice = advise(story("serve7b", "broken-padded"), options);
  const Candidate* shorter = find_step(advice, "the scenario's remedy fixed-shorter-input");
  ASSERT_NE(shorter, nullptr);
  EXPECT_TRUE(shorter->fits);
  EXPECT_TRUE(shorter->changes_answers);
  EXPECT_NE(shorter->trade.find("changes the answers"), std::string::npos) << shorter->trade;
  ASSERT_TRUE(advice.best.has_value());
  const Candidate& best = advice.candidates[*advice.best];
  EXPECT_FALSE(best.changes_answers) << best.step;
  EXPECT_TRUE(best.fits);
  for (const Candidate& c : advice.candidates) {
    if (c.fits) EXPECT_LE(c.need, advice.as_given.budget.bytes) << c.step;
  }
}

TEST(Advise, ARunThatFitsNeedsNothing) {
  const Advice advice = advise(story("gpt_train", "bf16"));
  EXPECT_EQ(advice.as_given.outcome.status, OutcomeStatus::ok);
  EXPECT_TRUE(advice.candidates.empty());
  ASSERT_FALSE(advice.path.empty());
  EXPECT_NE(advice.path.front().find("fits"), std::string::npos);
}

}  // namespace
}  // namespace oomlab::advise
