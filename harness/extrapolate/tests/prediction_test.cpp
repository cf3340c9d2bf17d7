#include "harness/extrapolate/prediction.hpp"

#include <gtest/gtest.h>

#include "harness/extrapolate/extrapolate_record.hpp"
#include "harness/extrapolate/tests/recordings.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::extrapolate {
namespace {

using testing::extrapolate_batches;
using testing::TrainingShape;
using testing::truth;

TEST(Prediction, PeaksEqualTheProgramRunAtTheTarget) {
  const Extrapolation model = extrapolate_batches({1, 2, 4});
  for (std::int64_t at : {8, 16, 33}) {
    const Prediction prediction = predict(model, at, {});
    const testing::Peaks real = truth(at);
    EXPECT_EQ(prediction.result.peak_allocated, real.allocated) << "batch " << at;
    EXPECT_EQ(prediction.result.peak_reserved, real.reserved) << "batch " << at;
    EXPECT_TRUE(prediction.exact());
    EXPECT_TRUE(prediction.result.fits());
  }
}

TEST(Prediction, QuadraticPeaksEqualTheProgramRunAtTheTarget) {
  TrainingShape shape;
  shape.quadratic = true;
  const Extrapolation model = extrapolate_batches({1, 2, 4}, shape);
  const Prediction prediction = predict(model, 12, {});
  const testing::Peaks real = truth(12, shape);
  EXPECT_EQ(prediction.result.peak_allocated, real.allocated);
  EXPECT_EQ(prediction.result.peak_reserved, real.reserved);
}

TEST(Prediction, WorkspacesLeftOutBoundThePeak) {
  TrainingShape one, two;
  one.workspaces = 1;
  two.workspaces = 2;
  const Extrapolation model = extrapolate_batches({1, 2, 4}, {}, FitMode::automatic, {one, one, two});
  const Prediction prediction = predict(model, 8, {});
  const testing::Peaks real = truth(8, two);
  EXPECT_FALSE(prediction.exact());
  EXPECT_LE(prediction.result.peak_allocated, real.allocated);
  EXPECT_GE(prediction.allocated_bound(), real.allocated);
  EXPECT_GE(prediction.reserved_bound(), real.reserved);
}

TEST(Prediction, OomAtTheBudgetIsDiagnosedAtItsLine) {
  const Extrapolation model = extrapolate_batches({1, 2});
  PredictionSettings settings;
  settings.budget = "1GiB";
  settings.what_if = true;
  const Prediction prediction = predict(model, 100, settings);  // ~1.2 GiB of activations
  ASSERT_FALSE(prediction.result.fits());
  ASSERT_TRUE(prediction.oom);
  EXPECT_EQ(prediction.oom->site, "train.py:40 backward");
  EXPECT_EQ(memory::diagnosis_name(prediction.oom->info.diagnosis), std::string("capacity"));
  EXPECT_GT(prediction.need_allocated, std::uint64_t{1} << 30);
  EXPECT_FALSE(prediction.what_if.empty());
  EXPECT_TRUE(prediction.what_if.front().as_recorded);
}

TEST(Prediction, BisectFindsTheLargestBatchThatFits) {
  const Extrapolation model = extrapolate_batches({1, 2, 4});
  PredictionSettings settings;
  settings.budget = "1GiB";
  const BisectAnswer answer = bisect(model, settings);
  ASSERT_TRUE(answer.largest);
  EXPECT_FALSE(answer.unbounded);
  EXPECT_TRUE(predict(model, *answer.largest, settings).result.fits());
  EXPECT_FALSE(predict(model, *answer.largest + 1, settings).result.fits());
  // 50 MB of weights and 12 MB a batch at the peak: about 85 in 1 GiB.
  EXPECT_GT(*answer.largest, 70);
  EXPECT_LT(*answer.largest, 90);
  EXPECT_FALSE(answer.largest_within_bound) << "exact: no bound to fit";
}

TEST(Prediction, BisectWhenNothingFits) {
  const Extrapolation model = extrapolate_batches({1, 2});
  PredictionSettings settings;
  settings.budget = "40MiB";  // the weights alone are 47.7 MiB
  EXPECT_FALSE(bisect(model, settings).largest);
}

TEST(Prediction, BisectWithWorkspacesAlsoAnswersWithinTheBound) {
  TrainingShape one, two;
  one.workspaces = 1;
  two.workspaces = 2;
  const Extrapolation model = extrapolate_batches({1, 2, 4}, {}, FitMode::automatic, {one, one, two});
  PredictionSettings settings;
  settings.budget = "1GiB";
  const BisectAnswer answer = bisect(model, settings);
  ASSERT_TRUE(answer.largest);
  ASSERT_TRUE(answer.largest_within_bound);
  EXPECT_LE(*answer.largest_within_bound, *answer.largest);
}

TEST(Prediction, RecordIsAQuestionCompareReads) {
  const Extrapolation model = extrapolate_batches({1, 2});
  const Prediction prediction = predict(model, 8, {});
  const RunRecord record = extrapolation_record(model, prediction);
  EXPECT_EQ(record.scenario, "extrapolate");
  EXPECT_EQ(record.variant, "b2.pickle");
  EXPECT_EQ(record.knobs.at("batch"), "8");
  EXPECT_EQ(record.memory.peak_reserved, prediction.result.peak_reserved);
  EXPECT_EQ(record.metrics.at("exact"), 1.0);
  EXPECT_EQ(record.metrics.count("divergent_events"), 0u);
  EXPECT_TRUE(record.matches_expectation);
  EXPECT_EQ(run_record_from_json(to_json(record)), record);
}

}  // namespace
}  // namespace oomlab::extrapolate
