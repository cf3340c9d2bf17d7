// Replays of the real torch 2.11 snapshots (harness/replay/tests/fixtures/torch) written with
// --out, then compared and reported as a user does: before and after a change compare on the
// replay's own numbers (sites, iterations, leak, fits), and `report` draws a replay's timeline
// from the trace written beside its record, with the iterations marked, never re-running it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"

namespace oomlab::cli_test {
namespace {

std::string torch_fixture(const std::string& name) {
  return std::string(OOMLAB_SOURCE_DIR) + "/harness/replay/tests/fixtures/torch/" + name +
         "-torch2.11.0_cu130.pickle.gz";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// oomlab replay FIXTURE --out <dir>/<stem>.json (and its trace as <stem>.trace.json when asked).
void replay(const TempDir& dir, const std::string& fixture, const std::string& stem, bool trace) {
  std::vector<std::string> arguments = {"replay", torch_fixture(fixture), "--out", dir.path(stem + ".json")};
  if (trace) arguments.insert(arguments.end(), {"--trace", dir.path(stem + ".trace.json")});
  const Result result = run_oomlab(arguments);
  ASSERT_EQ(result.exit_code, 0) << fixture << ": " << result.out << result.err;
}

// oomlab compare of two replays, `before` FIXTURE and `after` FIXTURE (as a user compares a run
// before and after a change), with `flag` (--all, --json).
Result compare_replays(const std::string& before, const std::string& after, const std::string& flag) {
  TempDir dir;
  replay(dir, before, "before", false);
  replay(dir, after, "after", false);
  return run_oomlab({"compare", dir.path("before.json"), dir.path("after.json"), flag});
}

// The verdict of the first row of `metric` in compare's table ("" when there is none).
std::string verdict_of(const std::string& table, const std::string& metric) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (!has(line, "  " + metric + " ")) continue;
    const std::size_t end = line.find_last_not_of(' ');
    const std::size_t start = line.find_last_of(' ', end);
    return line.substr(start + 1, end - start);
  }
  return "";
}

TEST(ReplayCompareCli, TheFragmentationOomGoneWithExpandableSegmentsIsBetter) {
  const Result result = compare_replays("frag_oom", "frag_expandable", "--all");
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(verdict_of(result.out, "outcome"), "better") << result.out;
  EXPECT_TRUE(has(result.out, "the OOM is gone")) << result.out;
  // The same line of the workload holds the same bytes at the peak in both runs.
  EXPECT_TRUE(has(result.out, "site ")) << result.out;
  EXPECT_TRUE(has(result.out, "record_snapshots.py:201 fragmentation_workload")) << result.out;
  EXPECT_EQ(verdict_of(result.out, "divergent events"), "same") << result.out;
  EXPECT_TRUE(has(result.out, "no regression")) << result.out;
}

TEST(ReplayCompareCli, TheSameLeakingReplayTwiceIsAllTheSame) {
  const Result result = compare_replays("srgan_leak", "srgan_leak", "--all");
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_TRUE(has(result.out, "record_snapshots.py:177 srgan_leak")) << result.out;  // the largest site
  EXPECT_EQ(verdict_of(result.out, "iterations"), "same") << result.out;
  EXPECT_EQ(verdict_of(result.out, "leak per iteration"), "same") << result.out;
  EXPECT_TRUE(has(result.out, "29.50MiB")) << result.out;
  EXPECT_FALSE(has(result.out, "better")) << result.out;
  EXPECT_FALSE(has(result.out, "worse")) << result.out;
  EXPECT_FALSE(has(result.out, "changed")) << result.out;
  EXPECT_TRUE(has(result.out, "no regression: 10 same")) << result.out;
}

TEST(ReplayCompareCli, TheLeakAgainstARunWithoutOneIsBetterInJson) {
  // Two different snapshots of one set each: they pair as before and after of one program.
  const Result result = compare_replays("srgan_leak", "gpt2_124m_bf16_train", "--json");
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;  // GPT-2's peaks are 6x higher: worse rows
  const nlohmann::json json = nlohmann::json::parse(result.out);
  bool leak_row = false;
  for (const nlohmann::json& row : json["rows"]) {
    if (row["metric"] != "leak per iteration") continue;
    leak_row = true;
    EXPECT_EQ(row["b_text"], "no leak") << row.dump();
    EXPECT_EQ(row["verdict"], "better") << row.dump();
  }
  EXPECT_TRUE(leak_row) << result.out;
}

TEST(ReplayReportCli, TheTimelineMarksTheIterationsFromTheTraceBesideTheRecord) {
  TempDir dir;
  replay(dir, "srgan_leak", "srgan", true);
  replay(dir, "compile_cuda_graphs", "compiled", false);  // no trace: said why, not re-run
  const Result result = run_oomlab({"report", dir.path()});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_FALSE(has(result.err, "re-running")) << result.err;
  const std::string page = read_file(dir.path("report.md"));
  EXPECT_FALSE(has(page, "unknown scale")) << page;
  EXPECT_TRUE(has(page, "No memory timeline for compile_cuda_graphs")) << page;
  EXPECT_TRUE(has(page, "a replay of a snapshot is not re-run")) << page;
  EXPECT_TRUE(has(page, "with the iterations the replay found marked")) << page;
  EXPECT_TRUE(has(page, "| srgan_leak-torch2.11.0_cu130.pickle.gz | ")) << page;
  EXPECT_TRUE(has(page, "record\\_snapshots.py:177 srgan\\_leak") || has(page, "record_snapshots.py:177 srgan_leak"))
      << page;
  const std::string svg = read_file(dir.path("charts/replay-snapshot-timeline.svg"));
  EXPECT_TRUE(has(svg, "iteration (x: allocator events in order)")) << svg.substr(0, 2000);
  EXPECT_FALSE(has(svg, "no steps marked"));
  EXPECT_TRUE(has(svg, "allocated (no tags)"));
  // The four iterations of the leak, numbered as the trace marks them.
  const nlohmann::json trace = nlohmann::json::parse(read_file(dir.path("srgan.trace.json")));
  int steps = 0;
  for (const nlohmann::json& event : trace["traceEvents"]) steps += event.value("name", "") == "step" ? 1 : 0;
  EXPECT_EQ(steps, 4);
}

TEST(ReplayReportCli, ARecordAloneIsNotReRunEvenWithoutNoRerun) {
  TempDir dir;
  replay(dir, "frag_oom", "frag", false);
  const Result result = run_oomlab({"report", dir.path()});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  const std::string page = read_file(dir.path("report.md"));
  EXPECT_TRUE(has(page, "--trace NAME.trace.json")) << page;
  EXPECT_FALSE(has(page, "unknown scale")) << page;
}

}  // namespace
}  // namespace oomlab::cli_test
