// Baseline files: what they hold, the round trip, regeneration, and a check that fails on every
// mutation of a committed baseline.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "harness/report/baseline_check.hpp"
#include "harness/report/baseline_file.hpp"
#include "harness/report/record_fields.hpp"
#include "harness/report/result_set.hpp"
#include "harness/report/tests/sample_records.hpp"
#include "harness/runner/atomic_file.hpp"

namespace oomlab::report {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using testing::leak_record;
using testing::ScratchDir;

TEST(BaselineFile, HoldsNoTimingTimestampCommitOrMachine) {
  const std::string text = baseline_json(leak_record()).dump(2);
  for (const char* absent : {"step_seconds", "timestamp", "git_commit", "throughput", "dry (no backing)",
                             "empty_cache_seconds", "oomlab_version"}) {
    EXPECT_EQ(text.find(absent), std::string::npos) << absent << " in\n" << text;
  }
  for (const char* present : {"\"baseline\": \"oomlab suite --device dry --scale full --update-baselines\"",
                              "\"predicted_oom_step\"", "\"need\"", "\"knobs\"", "\"retained\""}) {
    EXPECT_NE(text.find(present), std::string::npos) << present << " not in\n" << text;
  }
}

TEST(BaselineFile, RoundTripKeepsEveryDeterministicField) {
  const RunRecord back = record_from_baseline(Json::parse(baseline_json(leak_record()).dump()));
  EXPECT_TRUE(field_differences(leak_record(), back).empty());
  EXPECT_EQ(deterministic_fields(back).size(), deterministic_fields(leak_record()).size());
  Json broken = baseline_json(leak_record());
  broken.erase("outcome");
  try {
    record_from_baseline(broken);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "baseline: field outcome must be an object");
  }
}

TEST(BaselineFile, WriteReplacesTheFolderAndKeepsOtherFiles) {
  ScratchDir root;
  root.write("dry-full/old.variant.dry-full.json", to_json(leak_record()).dump());
  root.write("dry-full/suite.json", R"({"schema_version": 2, "runs": []})");
  root.write("dry-full/notes.json", R"({"mine": true})");
  RunRecord fixed = leak_record();
  fixed.variant = "fixed";
  const std::string folder = write_baselines(root.path(), {leak_record(), fixed});
  EXPECT_EQ(folder, root.path("dry-full"));
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"notes.json", "srgan_leak.broken.json", "srgan_leak.fixed.json"}));
  // Written twice from the same records: byte for byte the same (nothing measured in them).
  const std::string first = read_text_file(folder + "/srgan_leak.broken.json");
  RunRecord rerun = leak_record();
  rerun.timestamp = "2031-01-01T00:00:00Z";
  rerun.step_seconds = {9, 9};
  write_baselines(root.path(), {rerun, fixed});
  EXPECT_EQ(read_text_file(folder + "/srgan_leak.broken.json"), first);
}

TEST(BaselineFile, RootComesFromTheEnvironment) {
  ::setenv("OOMLAB_BASELINES", "/somewhere/else", 1);
  EXPECT_EQ(baselines_root(), "/somewhere/else");
  ::unsetenv("OOMLAB_BASELINES");
  EXPECT_EQ(baselines_root(), "results/baselines");
}

// The committed srgan_leak/broken baseline, copied and changed one field at a time: the check
// against the unchanged record must fail each time and name the field.
TEST(BaselineCheck, FailsOnEveryMutationOfACommittedBaseline) {
  const std::string committed = std::string(OOMLAB_SOURCE_DIR) + "/results/baselines/dry-full";
  const ResultSet baselines = load_result_set(committed);
  const LoadedRecord* leak = nullptr;
  for (const LoadedRecord& loaded : baselines.records) {
    if (loaded.record.scenario == "srgan_leak" && loaded.record.variant == "broken") leak = &loaded;
  }
  ASSERT_NE(leak, nullptr) << "no srgan_leak/broken baseline in " << committed;
  ASSERT_TRUE(leak->baseline) << "committed baselines are baseline files";
  const std::vector<LoadedRecord> now = {{leak->record, "now.json", false}};
  EXPECT_TRUE(check_against_baselines(committed, now).failures.size() == baselines.records.size() - 1)
      << "only the variants that did not run fail";

  const Json original = baseline_json(leak->record);
  struct Mutation {
    const char* field;
    void (*apply)(Json&);
  };
  const Mutation mutations[] = {
      {"oom step", [](Json& j) { j["outcome"]["step"] = j["outcome"]["step"].get<int>() + 6; }},
      {"metric leak_detected_at_step", [](Json& j) { j["metrics"]["leak_detected_at_step"] = 99.0; }},
      {"metric leak_bytes_per_step", [](Json& j) { j["metrics"]["leak_bytes_per_step"] = 1.0; }},
      {"metric predicted_oom_step", [](Json& j) { j["metrics"]["predicted_oom_step"] = 99.0; }},
      {"budget", [](Json& j) { j["budget"]["bytes"] = j["budget"]["bytes"].get<std::uint64_t>() + 1; }},
      {"peak of tag retained", [](Json& j) { j["memory"]["per_tag_peak"]["retained"] = 1; }},
      {"peak of tag workspace", [](Json& j) { j["memory"]["per_tag_peak"].erase("workspace"); }},
      {"need", [](Json& j) { j["memory"]["need"] = 123456789; }},
      {"knob", [](Json& j) { j["knobs"]["batch"] = "1000"; }},
      {"diagnosis", [](Json& j) { j["outcome"]["diagnosis"] = "capacity"; }},
      {"peak_allocated",
       [](Json& j) { j["memory"]["peak_allocated"] = j["memory"]["peak_allocated"].get<std::uint64_t>() + 1; }},
  };
  for (const Mutation& mutation : mutations) {
    ScratchDir copy;
    Json changed = original;
    mutation.apply(changed);
    copy.write("dry-full/srgan_leak.broken.json", changed.dump(2));
    const BaselineCheck check = check_against_baselines(copy.path("dry-full"), now);
    ASSERT_EQ(check.failures.size(), 1u) << mutation.field;
    EXPECT_EQ(check.failures.front().rfind("srgan_leak/broken: ", 0), 0u) << check.failures.front();
    EXPECT_NE(check.failures.front().find(mutation.field), std::string::npos)
        << mutation.field << " not named in: " << check.failures.front();
  }
}

}  // namespace
}  // namespace oomlab::report
