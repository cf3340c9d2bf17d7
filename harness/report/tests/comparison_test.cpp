// compare_result_sets: matching, verdicts against threshold and noise, and the printed table.
#include <gtest/gtest.h>

#include "harness/memory/size.hpp"
#include "harness/report/comparison.hpp"
#include "harness/report/comparison_print.hpp"
#include "harness/report/comparison_rows.hpp"
#include "harness/report/input_error.hpp"
#include "harness/report/tests/sample_records.hpp"

namespace oomlab::report {
namespace {

using namespace oomlab::literals;
using testing::leak_record;
using testing::training_record;

ResultSet set_of(const std::string& source, std::vector<RunRecord> records) {
  ResultSet set;
  set.source = source;
  for (RunRecord& record : records) set.records.push_back({std::move(record), source + ".json", false});
  return set;
}

const ComparisonRow* row(const Comparison& comparison, const std::string& item, const std::string& metric) {
  for (const ComparisonRow& r : comparison.rows) {
    if (r.item == item && r.metric == metric) return &r;
  }
  return nullptr;
}

TEST(Compare, IdenticalSetsAreTheSameAndNotARegression) {
  const auto a = set_of("a", {leak_record(), training_record()});
  const Comparison c = compare_result_sets(a, a, {});
  EXPECT_FALSE(c.regression());
  EXPECT_EQ(c.count(Verdict::same), c.rows.size());
  EXPECT_NE(row(c, "gpt_train/bf16", "throughput"), nullptr);
  EXPECT_EQ(row(c, "srgan_leak/broken", "throughput"), nullptr) << "dry has no throughput";
  EXPECT_NE(verdict_line(c).find("no regression"), std::string::npos);
}

TEST(Compare, PeakBeyondTheThresholdIsWorseAndWithinIsSame) {
  RunRecord grown = training_record();
  grown.memory.peak_reserved = 5_GiB + 5_GiB / 10;  // +10%
  grown.memory.peak_allocated = 4_GiB + 1_MiB;      // +0.02%
  const Comparison c = compare_result_sets(set_of("a", {training_record()}), set_of("b", {grown}), {});
  EXPECT_TRUE(c.regression());
  EXPECT_EQ(row(c, "gpt_train/bf16", "peak_reserved")->verdict, Verdict::worse);
  EXPECT_EQ(row(c, "gpt_train/bf16", "peak_reserved")->delta_text, "+512.00MiB");
  EXPECT_NEAR(*row(c, "gpt_train/bf16", "peak_reserved")->ratio, 1.1, 1e-9);
  EXPECT_EQ(row(c, "gpt_train/bf16", "peak_allocated")->verdict, Verdict::same);
  // A 1 MiB change is a regression with no threshold.
  CompareOptions strict;
  strict.threshold = 0;
  const Comparison exact = compare_result_sets(set_of("a", {training_record()}), set_of("b", {grown}), strict);
  EXPECT_EQ(row(exact, "gpt_train/bf16", "peak_allocated")->verdict, Verdict::worse);
}

TEST(Compare, ThroughputWithinTheNoiseIsTheSame) {
  RunRecord noisy = training_record();
  noisy.step_seconds = {0.5, 0.08, 0.12, 0.09, 0.11, 0.10};  // ~16% noise
  noisy.throughput.value = 950;                              // -5%: within the noise
  Comparison c = compare_result_sets(set_of("a", {training_record()}), set_of("b", {noisy}), {});
  const ComparisonRow* r = row(c, "gpt_train/bf16", "throughput");
  ASSERT_NE(r, nullptr);
  EXPECT_GT(r->noise_b, 0.1);
  EXPECT_EQ(r->verdict, Verdict::same);
  EXPECT_NE(r->b_text.find("tokens/s \xC2\xB1"), std::string::npos) << r->b_text;

  RunRecord slower = training_record();
  slower.throughput.value = 950;  // -5% with 1% noise: worse
  c = compare_result_sets(set_of("a", {training_record()}), set_of("b", {slower}), {});
  EXPECT_EQ(row(c, "gpt_train/bf16", "throughput")->verdict, Verdict::worse);
  EXPECT_EQ(row(c, "gpt_train/bf16", "throughput")->delta_text, "-50 tokens/s");
  slower.throughput.value = 1100;
  c = compare_result_sets(set_of("a", {training_record()}), set_of("b", {slower}), {});
  EXPECT_EQ(row(c, "gpt_train/bf16", "throughput")->verdict, Verdict::better);
  EXPECT_FALSE(c.regression());
}

TEST(Compare, OutcomeThatBreaksTheStoryIsWorseAndAMovedOomIsChanged) {
  RunRecord later = leak_record();
  later.outcome.step = 20;
  Comparison c = compare_result_sets(set_of("a", {leak_record()}), set_of("b", {later}), {});
  const ComparisonRow* outcome = row(c, "srgan_leak/broken", "outcome");
  EXPECT_EQ(outcome->verdict, Verdict::changed);
  EXPECT_EQ(outcome->delta_text, "step 14 -> 20");
  EXPECT_FALSE(c.regression());

  RunRecord fixed_now_fails = training_record();
  fixed_now_fails.outcome = {OutcomeStatus::oom, "capacity", 2, "out of memory", 0};
  fixed_now_fails.matches_expectation = false;
  c = compare_result_sets(set_of("a", {training_record()}), set_of("b", {fixed_now_fails}), {});
  EXPECT_EQ(row(c, "gpt_train/bf16", "outcome")->verdict, Verdict::worse);
  EXPECT_EQ(row(c, "gpt_train/bf16", "outcome")->b_text, "oom @ step 2 (capacity)");
  EXPECT_TRUE(c.regression());
}

TEST(Compare, BudgetAndKnobChangesAreShown) {
  RunRecord other = leak_record();
  other.budget.bytes = 24_GiB;
  other.knobs["batch"] = "8";
  const Comparison c = compare_result_sets(set_of("a", {leak_record()}), set_of("b", {other}), {});
  EXPECT_EQ(row(c, "srgan_leak/broken", "budget")->verdict, Verdict::changed);
  EXPECT_EQ(row(c, "srgan_leak/broken", "budget")->b_text, "24.00GiB");
  EXPECT_EQ(row(c, "srgan_leak/broken", "knobs")->b_text, "batch=8,dtype=f32");
}

TEST(Compare, DryAgainstCudaNeedsExactAllocatorPeaks) {
  RunRecord dry = training_record();
  dry.device = {"dry", "dry (no backing)", "", 0, 0, 0};
  dry.throughput = {};
  RunRecord cuda = training_record();
  cuda.memory.peak_allocated += 512;  // one rounded block more than predicted
  const Comparison c = compare_result_sets(set_of("dry", {dry}), set_of("cuda", {cuda}), {});
  EXPECT_EQ(row(c, "gpt_train/bf16", "peak_allocated")->verdict, Verdict::differs);
  EXPECT_EQ(row(c, "gpt_train/bf16", "peak_reserved")->verdict, Verdict::same);
  EXPECT_EQ(row(c, "gpt_train/bf16", "peak_device_used"), nullptr);
  EXPECT_EQ(row(c, "gpt_train/bf16", "throughput"), nullptr);
  EXPECT_TRUE(c.regression());
  ASSERT_FALSE(c.notes.empty());
  EXPECT_NE(c.notes.back().find("different devices"), std::string::npos);
  EXPECT_EQ(row(c, "gpt_train/bf16", "peak_allocated")->setting, "dry/small vs cuda");
}

// A GPU's suite folder holds cuda/small and dry/full records: its cuda/small ones match the
// dry/small baselines across devices, its dry/full ones match nothing there.
TEST(Compare, LeftoverRecordsMatchAcrossDevices) {
  RunRecord dry_small = training_record();
  dry_small.device = {"dry", "dry (no backing)", "", 0, 0, 0};
  dry_small.throughput = {};
  RunRecord dry_full = dry_small;
  dry_full.scale = "full";
  const Comparison c =
      compare_result_sets(set_of("baselines", {dry_small}), set_of("gpu", {training_record(), dry_full}), {});
  EXPECT_EQ(row(c, "gpt_train/bf16", "peak_allocated")->setting, "dry/small vs cuda");
  EXPECT_EQ(row(c, "gpt_train/bf16", "peak_allocated")->verdict, Verdict::same);
  ASSERT_EQ(c.only_b.size(), 1u);
  EXPECT_EQ(c.only_b.front().setting, "dry/full");
}

TEST(Compare, KnobsTellApartRecordsOfOneVariant) {
  RunRecord batch8 = training_record();
  batch8.knobs = {{"batch", "8"}};
  RunRecord batch16 = training_record();
  batch16.knobs = {{"batch", "16"}};
  batch16.memory.peak_allocated = 8_GiB;
  const Comparison c = compare_result_sets(set_of("a", {batch8, batch16}), set_of("b", {batch16, batch8}), {});
  EXPECT_EQ(c.count(Verdict::worse), 0u) << comparison_text(c, {true, false});
  EXPECT_TRUE(c.only_a.empty());
}

TEST(Compare, UnmatchedRecordsAreListedAndNothingInCommonIsAnError) {
  RunRecord extra = training_record();
  extra.variant = "grad-accum";
  const Comparison c =
      compare_result_sets(set_of("a", {training_record(), extra}), set_of("b", {training_record()}), {});
  ASSERT_EQ(c.only_a.size(), 1u);
  EXPECT_EQ(c.only_a.front().item, "gpt_train/grad-accum");
  EXPECT_EQ(c.only_a.front().setting, "cuda/small");
  EXPECT_NE(comparison_text(c, {}).find("only in A (cuda/small): gpt_train/grad-accum\n"), std::string::npos);
  EXPECT_NE(verdict_line(c).find("1 only in A"), std::string::npos);
  EXPECT_THROW(compare_result_sets(set_of("a", {extra}), set_of("b", {leak_record()}), {}), InputError);
}

TEST(Compare, RecordsAgainstBenchmarksIsAnError) {
  ResultSet benchmarks;
  benchmarks.source = "bench.json";
  benchmarks.benchmarks.push_back({"bench.json", "BM_x", "", {{"real_time", "ms", 1.0, -1, Better::lower}}});
  try {
    compare_result_sets(set_of("a", {training_record()}), benchmarks, {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nothing to compare"), std::string::npos) << e.what();
  }
}

TEST(Compare, MetricsSelectRowsAndUnknownOnesAreRejected) {
  CompareOptions options;
  options.metrics = {"outcome"};
  const auto a = set_of("a", {training_record()});
  const Comparison c = compare_result_sets(a, a, options);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows.front().metric, "outcome");
  options.metrics = {"tags"};
  EXPECT_EQ(compare_result_sets(a, a, options).rows.size(), 2u);  // activations, weights
  options.metrics = {"peak_memory"};
  EXPECT_THROW(compare_result_sets(a, a, options), InputError);
}

TEST(Compare, TableHasUnitsRatiosAndTheVerdictLast) {
  RunRecord slower = training_record();
  slower.throughput.value = 900;
  slower.memory.peak_reserved = 6_GiB;
  const Comparison c = compare_result_sets(set_of("old", {training_record()}), set_of("new", {slower}), {});
  const std::string text = comparison_text(c, {});
  EXPECT_NE(text.find("A: old - 1 run record (cuda NVIDIA H200)"), std::string::npos) << text;
  EXPECT_NE(text.find("5.00GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("1.200x"), std::string::npos) << text;
  EXPECT_NE(text.find("0.900x"), std::string::npos) << text;
  EXPECT_NE(text.find("not shown; --all shows them"), std::string::npos) << text;
  const std::string last_line = text.substr(text.rfind('\n', text.size() - 2) + 1);
  EXPECT_EQ(
      last_line.rfind("regression: 2 worse (gpt_train/bf16 peak_reserved 1.200x, gpt_train/bf16 throughput 0.900x)", 0),
      0u)
      << last_line;
  EXPECT_EQ(text.find("\x1b["), std::string::npos) << "no colour unless asked";
  // JSON: the same rows, the same ones too.
  const auto json = comparison_json(c);
  EXPECT_EQ(json["rows"].size(), c.rows.size());
  EXPECT_TRUE(json["regression"].get<bool>());
  EXPECT_EQ(json["counts"]["worse"], 2);
}

TEST(Compare, JudgeUsesTheLargerOfThresholdAndNoise) {
  using detail::judge;
  EXPECT_EQ(judge(100, 103, Better::higher, 0.02, -1, -1), Verdict::better);
  EXPECT_EQ(judge(100, 103, Better::higher, 0.02, 0.05, -1), Verdict::same);
  EXPECT_EQ(judge(100, 97, Better::higher, 0.02, -1, 0.01), Verdict::worse);
  EXPECT_EQ(judge(100, 97, Better::lower, 0.02, -1, -1), Verdict::better);
  EXPECT_EQ(judge(100, 97, Better::unknown, 0.02, -1, -1), Verdict::changed);
  EXPECT_EQ(judge(0, 1, Better::lower, 0.5, -1, -1), Verdict::worse);
}

}  // namespace
}  // namespace oomlab::report
