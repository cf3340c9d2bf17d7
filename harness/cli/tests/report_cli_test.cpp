// oomlab report, and the files a run writes besides its record (trace paths said, dropped events
// noted, the OOM dump), as a user meets them.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/runner/atomic_file.hpp"

namespace oomlab::cli_test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ReportCli, ReportsARunWithTimelineSegmentsAndBars) {
  TempDir dir;
  fs::create_directories(dir.path("runs"));
  const Result run =
      run_oomlab({"run", "srgan_leak", "--device", "dry", "--scale", "small", "--out", dir.path("runs/r.json")});
  ASSERT_NE(run.exit_code, 2) << run.err;
  // The OOM dump beside the record, said on stderr: a Chrome trace with the segments at the OOM.
  const std::string dump = dir.path("runs/r.broken.oom.json");
  ASSERT_TRUE(fs::exists(dump)) << run.err;
  EXPECT_TRUE(contains(run.err, "oomlab: OOM dump of srgan_leak/broken written to " + dump)) << run.err;
  const Json oom = Json::parse(read_text_file(dump));
  EXPECT_TRUE(oom.contains("traceEvents"));
  EXPECT_FALSE(oom["otherData"]["oom"]["segments"].empty());
  EXPECT_FALSE(fs::exists(dir.path("runs/r.fixed.oom.json"))) << "only a variant that ran out of memory";

  const Result report = run_oomlab({"report", dir.path("runs"), "-o", dir.path("out/report.md")});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(contains(report.err, "oomlab: report written to " + dir.path("out/report.md"))) << report.err;
  const std::string md = read_text_file(dir.path("out/report.md"));
  EXPECT_TRUE(contains(md, "## srgan_leak\n\n| variant | scale | budget | outcome: dry |")) << md;
  EXPECT_TRUE(contains(md, "| broken | small | ")) << md;
  EXPECT_TRUE(contains(md, "\n\n### small scale")) << md;
  EXPECT_TRUE(contains(md, "a dry re-run of each variant's settings")) << md;
  for (const char* chart :
       {"srgan_leak-small-timeline.svg", "srgan_leak-small-segments.svg", "srgan_leak-small-peaks.svg"}) {
    EXPECT_TRUE(contains(md, std::string("(charts/") + chart + ")")) << chart;
    ASSERT_TRUE(fs::exists(dir.path(std::string("out/charts/") + chart))) << chart;
  }
  const std::string timeline = read_text_file(dir.path("out/charts/srgan_leak-small-timeline.svg"));
  EXPECT_TRUE(contains(timeline, "OOM in step")) << "the OOM is marked";
  EXPECT_TRUE(contains(timeline, "budget ")) << "the budget is drawn";
  // The re-runs' own output does not reach the user.
  EXPECT_FALSE(contains(report.err, "leak at step")) << report.err;
}

TEST(ReportCli, UsesTheTraceBesideARecordAndSaysWhereTracesGo) {
  TempDir dir;
  const Result run = run_oomlab({"run", "srgan_leak", "--variant", "fixed", "--device", "dry", "--scale", "small",
                                 "--out", dir.path("r.json"), "--trace", dir.path("r.trace.json")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.err, "oomlab: trace of srgan_leak/fixed written to " + dir.path("r.trace.json"))) << run.err;
  const Json trace = Json::parse(read_text_file(dir.path("r.trace.json")));
  EXPECT_EQ(trace["otherData"]["time_axis"], "logical: 1 us = 1 allocator event");
  const Result report = run_oomlab({"report", dir.path(), "--no-rerun", "-o", dir.path("report.md")});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(contains(read_text_file(dir.path("report.md")), "Trace: the trace written beside each record."));
}

TEST(ReportCli, DroppedTraceEventsAreNoted) {
  TempDir dir;
  const Result run = run_oomlab({"run", "srgan_leak", "--variant", "fixed", "--device", "dry", "--scale", "small",
                                 "--alloc-conf", "trace_capacity:100", "--trace", dir.path("t.json"), "--out",
                                 dir.path("r.json")});
  EXPECT_NE(run.exit_code, 2) << run.err;
  EXPECT_TRUE(contains(run.err, "trace kept the last 100 of ")) << run.err;
  EXPECT_TRUE(contains(run.err, "OOMLAB_ALLOC_CONF=trace_capacity:")) << run.err;
  const Json record = Json::parse(read_text_file(dir.path("r.json")));
  ASSERT_EQ(record["warnings"].size(), 1u) << record.dump(2);
  EXPECT_TRUE(contains(record["warnings"][0].get<std::string>(), "earliest dropped"));
}

TEST(ReportCli, BadInputIsOneErrorLine) {
  TempDir dir;
  expect_usage_error({"report", dir.path("missing")}, "missing: no such file or folder");
  expect_usage_error({"report", dir.path()}, "holds no run records");
}

}  // namespace
}  // namespace oomlab::cli_test
