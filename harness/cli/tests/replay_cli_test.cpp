// oomlab replay as a user runs it: the exit codes (0 reproduces PyTorch, 1 diverges, 2 bad
// input), the text a user reads, --json, --out (the usual run record) and --trace.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/run_record.hpp"

namespace oomlab::cli_test {
namespace {

std::string fixture(const std::string& name) {
  return std::string(OOMLAB_SOURCE_DIR) + "/harness/replay/tests/fixtures/" + name;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ReplayCli, AFaithfulReplayExitsZeroAndSaysSo) {
  const Result result = run_oomlab({"replay", fixture("training_protocol4.pickle")});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_TRUE(has(result.out, "0 divergent events")) << result.out;
  EXPECT_TRUE(has(result.out, "= PyTorch's")) << result.out;
  EXPECT_TRUE(has(result.out, "live at the peak")) << result.out;
}

TEST(ReplayCli, TheOomIsReproducedDiagnosedAndLocated) {
  TempDir dir;
  const Result result = run_oomlab({"replay", fixture("fragmentation_oom.pickle"), "--what-if", "--out",
                                    dir.path("record.json"), "--trace", dir.path("trace.json")});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_TRUE(has(result.out, "reproduced")) << result.out;
  EXPECT_TRUE(has(result.out, "at frag2.py:21 gather_checkpoint")) << result.out;
  EXPECT_TRUE(has(result.out, "diagnosis: fragmentation")) << result.out;
  EXPECT_TRUE(has(result.out, "inferred")) << result.out;
  EXPECT_TRUE(has(result.out, "expandable_segments:True")) << result.out;
  EXPECT_TRUE(has(result.out, "verdict: ")) << result.out;
  const RunRecord record = run_record_from_text(read_text_file(dir.path("record.json")));
  EXPECT_EQ(record.scenario, "replay");
  EXPECT_EQ(record.variant, "fragmentation_oom.pickle");
  EXPECT_EQ(record.outcome.status, OutcomeStatus::oom);
  EXPECT_EQ(record.outcome.diagnosis, "fragmentation");
  const nlohmann::json trace = nlohmann::json::parse(read_text_file(dir.path("trace.json")));
  EXPECT_TRUE(trace.contains("traceEvents"));
}

TEST(ReplayCli, AWindowIsNamedAndABadOneIsOneLineExitTwo) {
  const std::string srgan = fixture("torch/srgan_leak-torch2.11.0_cu130.pickle.gz");
  const Result window = run_oomlab({"replay", srgan, "--from", "entry:4000", "--to", "6.29s"});
  EXPECT_EQ(window.exit_code, 0) << window.out << window.err;
  EXPECT_TRUE(has(window.out, "window    entries 4000 to ")) << window.out;
  EXPECT_TRUE(has(window.out, "= PyTorch's")) << window.out;
  const Result json = run_oomlab({"replay", srgan, "--from", "entry:4000", "--json"});
  EXPECT_EQ(nlohmann::json::parse(json.out)["window"]["first_entry"], 4000);
  TempDir dir;
  const Result recorded = run_oomlab({"replay", srgan, "--from", "entry:4000", "--out", dir.path("record.json")});
  EXPECT_EQ(recorded.exit_code, 0) << recorded.err;
  const RunRecord record = run_record_from_text(read_text_file(dir.path("record.json")));
  EXPECT_EQ(record.metrics.at("window_first_entry"), 4000.0);
  EXPECT_EQ(record.metrics.at("window_last_entry"), 5511.0);
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--from", "soon"},
                                              std::vector<std::string>{"--from", "3s", "--to", "entry:10"},
                                              std::vector<std::string>{"--to", "entry:100000"}}) {
    std::vector<std::string> args = {"replay", srgan};
    args.insert(args.end(), bad.begin(), bad.end());
    const Result result = run_oomlab(args);
    EXPECT_EQ(result.exit_code, 2) << bad[1] << ": " << result.out << result.err;
    EXPECT_TRUE(result.out.empty()) << result.out;
    EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
  }
}

TEST(ReplayCli, JsonHasTheSameFields) {
  const Result result = run_oomlab({"replay", fixture("oom_fragmentation.pickle"), "--json", "--what-if"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["fidelity"]["divergent_events"], 0);
  EXPECT_EQ(json["oom"]["reproduced"], true);
  EXPECT_EQ(json["oom"]["diagnosis"], "capacity");
  EXPECT_TRUE(json["what_if"].is_array());
  EXPECT_EQ(json["budget"]["inferred"], true);
}

TEST(ReplayCli, ADivergenceExitsOne) {
  // Under a 1 GiB cap the OOM PyTorch had does not happen: not a reproduction.
  const Result result = run_oomlab({"replay", fixture("oom_fragmentation.pickle"), "--budget", "1GiB"});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_TRUE(has(result.out, "first divergent event")) << result.out;
  EXPECT_TRUE(has(result.out, "PyTorch: out of memory")) << result.out;
}

TEST(ReplayCli, MalformedSnapshotsAreOneErrorLineAndExitTwo) {
  expect_usage_error({"replay", fixture("bad_truncated_half.pickle")}, "bad_truncated_half.pickle");
  expect_usage_error({"replay", fixture("bad_exploit_os_system.pickle")}, "bad_exploit_os_system.pickle");
  expect_usage_error({"replay", fixture("bad_protocol6.pickle")}, "bad_protocol6.pickle");
  expect_usage_error({"replay", fixture("bad_deep_lists.pickle")}, "bad_deep_lists.pickle");
  expect_usage_error({"replay", fixture("bad_huge_binbytes.pickle")}, "bad_huge_binbytes.pickle");
  expect_usage_error({"replay", fixture("does_not_exist.pickle")}, "cannot be opened");
}

// Segments only (history off, include_traces=False, enabled="state"): it was refused (exit 2);
// the state at the dump is shown, what cannot be done is said, and how to record a replayable one.
TEST(ReplayCli, ASnapshotWithoutHistoryShowsTheStateAtTheDumpAndHowToRecordOne) {
  for (const char* name : {"no_history.pickle", "state_only_history.pickle"}) {
    Result result = run_oomlab({"replay", fixture(name)});
    EXPECT_EQ(result.exit_code, 0) << name << result.err;
    EXPECT_NE(result.out.find("the state at the dump (segments only)"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("2 segments, 22.00MiB reserved: 8.25MiB allocated, 13.75MiB free in the cache "
                              "(largest free block 12.00MiB)"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("8.25MiB  100%  3 blocks  train.py:12 <module>"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("cannot be replayed"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("_record_memory_history"), std::string::npos) << result.out;
    Result json = run_oomlab({"replay", fixture(name), "--json"});
    EXPECT_EQ(json.exit_code, 0) << json.err;
    const auto parsed = nlohmann::json::parse(json.out);
    EXPECT_EQ(parsed["replayed"], false);
    EXPECT_EQ(parsed["devices"][0]["allocated"], 8650752);
    expect_usage_error({"replay", fixture(name), "--out", "/tmp/never-written.json"}, "nothing to write");
  }
}

TEST(ReplayCli, BadOptionsAreUsageErrors) {
  expect_usage_error({"replay", fixture("training_protocol4.pickle"), "--alloc-conf", "max_split_size_mb:5"},
                     "--alloc-conf");
  expect_usage_error({"replay", fixture("training_protocol4.pickle"), "--budget", "12"}, "budget");
  expect_usage_error({"replay", fixture("training_protocol4.pickle"), "--device", "3"}, "--device 3");
}

}  // namespace
}  // namespace oomlab::cli_test
