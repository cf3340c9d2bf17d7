// oomlab run and suite end to end on host and dry with the real fragmentation scenario:
// the records on disk, their expectations, and the exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/run_record.hpp"

namespace oomlab::cli_test {
namespace {

TEST(CliRun, OneVariantWritesOneRecord) {
  TempDir dir;
  Result result = run_oomlab({"run", "fragmentation", "--variant", "broken", "--device", "host",
                              "--out", dir.path("broken.json"), "--trace", dir.path("trace.json")});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  RunRecord record = run_record_from_text(read_text_file(dir.path("broken.json")));
  EXPECT_EQ(record.scenario, "fragmentation");
  EXPECT_EQ(record.variant, "broken");
  EXPECT_EQ(record.device.kind, "host");
  EXPECT_EQ(record.scale, "tiny");
  EXPECT_EQ(record.outcome.status, OutcomeStatus::oom) << record.outcome.message;
  EXPECT_EQ(record.outcome.diagnosis, "fragmentation");
  EXPECT_TRUE(record.matches_expectation);
  EXPECT_GT(record.memory.peak_reserved, 0u);
  EXPECT_GE(record.memory.peak_device_used, record.memory.peak_reserved);
  auto trace = nlohmann::json::parse(read_text_file(dir.path("trace.json")));
  EXPECT_FALSE(trace.empty());
  EXPECT_NE(result.out.find("oom (fragmentation)"), std::string::npos) << result.out;
}

// --profile goes through the child process: the record keeps each range's time and the table
// lists the ranges (dry does no work, so every range is there at 0 ms).
TEST(CliRun, ProfileRecordsAndPrintsTheRanges) {
  TempDir dir;
  Result result = run_oomlab({"run", "gpt_train", "--variant", "bf16", "--device", "dry", "--scale", "full",
                              "--profile", "--out", dir.path("bf16.json")});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  RunRecord record = run_record_from_text(read_text_file(dir.path("bf16.json")));
  for (const char* range : {"profile_ms.fwd.attention", "profile_ms.bwd.attention", "profile_ms.train.optimizer"}) {
    ASSERT_EQ(record.metrics.count(range), 1u) << range;
    EXPECT_EQ(record.metrics.at(range), 0.0) << range;
  }
  EXPECT_NE(result.out.find("profile of gpt_train/bf16 on dry"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("bwd.attention"), std::string::npos) << result.out;

  Result plain = run_oomlab({"run", "gpt_train", "--variant", "bf16", "--device", "dry", "--out",
                             dir.path("plain.json")});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  RunRecord unprofiled = run_record_from_text(read_text_file(dir.path("plain.json")));
  EXPECT_EQ(unprofiled.metrics.count("profile_ms.fwd.attention"), 0u);
  EXPECT_EQ(plain.out.find("profile of"), std::string::npos);
}

TEST(CliRun, AllVariantsWriteAnArrayAndMatch) {
  TempDir dir;
  Result result = run_oomlab({"run", "fragmentation", "--device", "dry", "--scale", "full",
                              "--out", dir.path("all.json"), "--trace", dir.path("t.json")});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  auto json = nlohmann::ordered_json::parse(read_text_file(dir.path("all.json")));
  ASSERT_TRUE(json.is_array());
  ASSERT_GE(json.size(), 2u);
  for (const auto& item : json) {
    RunRecord record = run_record_from_json(item);
    EXPECT_TRUE(record.matches_expectation) << record.variant << ": " << record.outcome.message;
    EXPECT_EQ(record.device.kind, "dry");
    EXPECT_EQ(record.scale, "full");
    EXPECT_TRUE(std::filesystem::exists(dir.path("t." + record.variant + ".json")))
        << record.variant;
  }
}

TEST(CliRun, AFixSqueezedBelowItsNeedIsAnsweredNotFailed) {
  // A budget of one's own is a question (exit 0): the fix no longer fits, and the answer says by
  // how much, under the table.
  Result result = run_oomlab({"run", "fragmentation", "--variant", "fixed-max-split", "--device",
                              "dry", "--budget", "4MiB"});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("oom (capacity)"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("short by"), std::string::npos) << result.out;
}

TEST(CliSuite, WritesOneRecordPerRunAndASummary) {
  TempDir dir;
  Result result = run_oomlab({"suite", "--device", "dry", "--out-dir", dir.path("suite")});
  auto summary = nlohmann::ordered_json::parse(read_text_file(dir.path("suite/suite.json")));
  EXPECT_EQ(summary["schema_version"], kRunRecordSchemaVersion);
  // Every scenario's health is its own tests' business; here: the summary tells the truth
  // about the records, and the exit code follows it.
  bool all_match = true;
  int fragmentation_runs = 0;
  ASSERT_GE(summary["runs"].size(), 4u);
  for (const auto& run : summary["runs"]) {
    std::string file = dir.path("suite/" + run["record"].get<std::string>());
    RunRecord record = run_record_from_text(read_text_file(file));
    EXPECT_EQ(record.scenario, run["scenario"]);
    EXPECT_EQ(record.variant, run["variant"]);
    EXPECT_EQ(record.device.kind, "dry");
    EXPECT_EQ(record.scale, "full");
    EXPECT_EQ(record.matches_expectation, run["matches_expectation"].get<bool>());
    EXPECT_EQ(outcome_status_name(record.outcome.status), run["status"]);
    all_match = all_match && record.matches_expectation;
    if (record.scenario == "fragmentation") {
      ++fragmentation_runs;
      EXPECT_TRUE(record.matches_expectation) << record.variant << ": " << record.outcome.message;
    }
  }
  EXPECT_EQ(fragmentation_runs, 5);  // broken, three fixes, debug-no-caching
  EXPECT_EQ(summary["all_match"].get<bool>(), all_match);
  EXPECT_EQ(result.exit_code, all_match ? 0 : 1) << result.out << result.err;
  EXPECT_NE(result.out.find("peak reserved"), std::string::npos) << result.out;
}

}  // namespace
}  // namespace oomlab::cli_test
