// oomlab compare, run as a user runs it: exit codes 0 / 1 / 2, the table, --json.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/report/tests/sample_records.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/run_record.hpp"

namespace oomlab::cli_test {
namespace {

using Json = nlohmann::ordered_json;

const std::string kResults = std::string(OOMLAB_SOURCE_DIR) + "/results/";

// A cuda record with steps, to compare with a changed copy of itself: the report tests' training
// record with five steps and one tag.
Json sample_record() {
  RunRecord r = report::testing::training_record();
  r.steps = 5;
  r.memory.per_tag_peak = {{"activations", 2ull << 30}};
  r.step_seconds = {0.5, 0.1, 0.1, 0.101, 0.099};
  return to_json(r);
}

std::string write(const TempDir& dir, const std::string& name, const Json& json) {
  std::ofstream(dir.path(name)) << json.dump(2);
  return dir.path(name);
}

std::string last_line(const std::string& text) {
  const std::size_t end = text.find_last_not_of('\n');
  const std::size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end - (start == std::string::npos ? 0 : start + 1) + 1);
}

TEST(CompareCli, TheSameRecordsAreNoRegression) {
  TempDir dir;
  const std::string a = write(dir, "a.json", sample_record());
  const Result result = run_oomlab({"compare", a, a});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(last_line(result.out), "no regression: 5 same; threshold 2%") << result.out;
  EXPECT_TRUE(result.err.empty()) << result.err;
}

TEST(CompareCli, AGrownPeakIsARegressionWithExitCode1) {
  TempDir dir;
  const std::string a = write(dir, "a.json", sample_record());
  Json grown = sample_record();
  grown["memory"]["peak_reserved"] = (5ull << 30) + (1ull << 30);
  const std::string b = write(dir, "b.json", grown);
  const Result result = run_oomlab({"compare", a, b});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.out.find("peak_reserved  5.00GiB  6.00GiB  +1.00GiB  1.200x  worse"), std::string::npos)
      << result.out;
  EXPECT_EQ(last_line(result.out).rfind("regression: 1 worse (gpt_train/bf16 peak_reserved 1.200x)", 0), 0u)
      << result.out;
  // Above a threshold of 25% it is the same.
  EXPECT_EQ(run_oomlab({"compare", "--threshold", "25%", a, b}).exit_code, 0);
}

TEST(CompareCli, JsonHasEveryRowAndTheVerdict) {
  TempDir dir;
  const std::string a = write(dir, "a.json", sample_record());
  const Result result = run_oomlab({"compare", "--json", a, a});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const Json json = Json::parse(result.out);
  EXPECT_EQ(json["rows"].size(), 5u);  // outcome, three peaks (need is unknown), throughput
  EXPECT_EQ(json["rows"][0]["metric"], "outcome");
  EXPECT_FALSE(json["regression"].get<bool>());
  EXPECT_EQ(json["threshold"], 0.02);
}

TEST(CompareCli, BenchmarkJsonComparesPerCounter) {
  const Result result =
      run_oomlab({"compare", "--all", "--metrics", "real_time,TFLOP/s", kResults + "h200-history/matmul_bench.json",
                  kResults + "h200-history/matmul_bench.json"});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("TFLOP/s"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("88.67 us"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("ratio_to_cublas"), std::string::npos) << "not asked for";
}

TEST(CompareCli, BadInputIsOneErrorLineAndExitCode2) {
  TempDir dir;
  const std::string a = write(dir, "a.json", sample_record());
  expect_usage_error({"compare", a, dir.path("missing.json")}, "missing.json: no such file or folder");
  std::ofstream(dir.path("broken.json")) << "{\"schema_version\": 3,";
  expect_usage_error({"compare", a, dir.path("broken.json")}, "broken.json: not valid JSON");
  expect_usage_error({"compare", a, kResults + "h200-history/matmul_bench.json"}, "nothing to compare");
  expect_usage_error({"compare", "--threshold", "two", a, a}, "--threshold 'two' is not a percentage");
  expect_usage_error({"compare", "--metrics", "speed", a, a}, "--metrics: unknown metric 'speed'");
  expect_usage_error({"compare", a}, "B is required");
}

// A run that ran out of memory stopped at its OOM: its lower peak was marked "better".
TEST(CompareCli, AnOomRunsPeakIsNotComparable) {
  TempDir dir;
  const std::string a = write(dir, "a.json", sample_record());
  Json stopped = sample_record();
  stopped["outcome"]["status"] = "oom";
  stopped["outcome"]["step"] = 2;
  stopped["outcome"]["diagnosis"] = "capacity";
  stopped["memory"]["peak_allocated"] = 3ull << 30;
  stopped["memory"]["peak_reserved"] = 3ull << 30;
  const std::string b = write(dir, "b.json", stopped);
  const Result result = run_oomlab({"compare", "--all", a, b});
  EXPECT_NE(result.out.find("not comparable: B ran out of memory at step 2"), std::string::npos) << result.out;
  for (const char* metric : {"peak_allocated", "peak_reserved"}) {
    const std::size_t row = result.out.find(metric);
    ASSERT_NE(row, std::string::npos) << result.out;
    const std::string line = result.out.substr(row, result.out.find('\n', row) - row);
    EXPECT_EQ(line.find("better"), std::string::npos) << line;
  }
}

// Every knob of a variant made a row 300 characters wide: only knobs set by hand are shown.
TEST(CompareCli, ASettingShowsOnlyTheKnobsSetByHand) {
  TempDir dir;
  const Result listed = run_oomlab({"run", "gpt_train", "--variant", "bf16", "--device", "dry", "--scale", "small",
                                    "--out", dir.path("own.json")});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const Result asked = run_oomlab({"run", "gpt_train", "--variant", "bf16", "--device", "dry", "--scale", "small",
                                   "--set", "batch=2", "--out", dir.path("asked.json")});
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  const Result same = run_oomlab({"compare", "--all", dir.path("own.json"), dir.path("own.json")});
  EXPECT_NE(same.out.find("dry/small "), std::string::npos) << same.out;
  EXPECT_EQ(same.out.find("attention="), std::string::npos) << "the variant's own knobs are not repeated\n" << same.out;
  const Result changed = run_oomlab({"compare", "--all", dir.path("asked.json"), dir.path("asked.json")});
  EXPECT_NE(changed.out.find("dry/small batch=2"), std::string::npos) << changed.out;
  for (std::size_t start = 0; start < changed.out.size();) {
    const std::size_t end = changed.out.find('\n', start);
    EXPECT_LT((end == std::string::npos ? changed.out.size() : end) - start, 160u) << changed.out;
    start = end == std::string::npos ? changed.out.size() : end + 1;
  }
}

}  // namespace
}  // namespace oomlab::cli_test
