// oomlab report with records an attacker wrote (hardening issue): its scratch folder cannot be
// planted, file names from record fields stay inside the output folder, -o names a page, names
// are escaped in the page and the charts, and re-runs are bounded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/bounded_oomlab.hpp"
#include "harness/runner/atomic_file.hpp"

namespace oomlab::cli_test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A dry record of srgan_leak/fixed at tiny scale (quick to re-run), written to `path`.
Json dry_record(const TempDir& dir, const std::string& path) {
  const Result run = run_oomlab_bounded({"run", "srgan_leak", "--variant", "fixed", "--device", "dry", "--scale",
                                         "tiny", "--out", dir.path("made.json")},
                                        {120});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  Json record = Json::parse(read_text_file(dir.path("made.json")));
  if (record.is_array()) record = record.front();
  fs::remove(dir.path("made.json"));
  fs::create_directories(fs::path(path).parent_path());
  write_file_atomically(path, record.dump(2));
  return record;
}

TEST(ReportSafety, TheScratchFolderCannotBePlantedByAnotherUser) {
  TempDir dir;
  dry_record(dir, dir.path("runs/r.json"));
  fs::create_directories(dir.path("tmp"));
  fs::create_directories(dir.path("victim"));
  const std::string victim = dir.path("victim/srgan_leak.fixed.tiny.trace.json");
  write_file_atomically(victim, "precious");
  // The old scratch name, planted before oomlab starts: a link to a folder the attacker chose.
  const std::string tmp = dir.path("tmp"), target = dir.path("victim");
  const Result report = run_oomlab_bounded({"report", dir.path("runs"), "-o", dir.path("out/report.md")}, {120},
                                           {{"TMPDIR", tmp}}, [&] {
                                             const std::string planted =
                                                 tmp + "/oomlab-report-" + std::to_string(::getpid());
                                             (void)::symlink(target.c_str(), planted.c_str());
                                           });
  ASSERT_EQ(report.exit_code, 0) << report.err;
  ASSERT_TRUE(fs::exists(victim)) << "the re-run wrote into the planted folder";
  EXPECT_EQ(read_text_file(victim), "precious");
  EXPECT_TRUE(contains(read_text_file(dir.path("out/report.md")), "a dry re-run of each variant's settings"));
  for (const auto& entry : fs::directory_iterator(tmp)) {
    EXPECT_TRUE(fs::is_symlink(entry.path())) << "scratch left behind: " << entry.path();
  }
}

TEST(ReportSafety, FileNamesFromRecordFieldsStayInTheOutputFolder) {
  TempDir dir;
  Json record = dry_record(dir, dir.path("runs/r.json"));
  record["scenario"] = "../../../../ESCAPED";
  write_file_atomically(dir.path("runs/r.json"), record.dump(2));
  record["scenario"] = "a/b";
  record["scale"] = "..";
  write_file_atomically(dir.path("runs/s.json"), record.dump(2));
  const std::string page = dir.path("deep/a/b/out/report.md");
  const Result report = run_oomlab_bounded({"report", dir.path("runs"), "--no-rerun", "-o", page}, {60});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  std::size_t charts = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir.path())) {
    if (entry.path().extension() != ".svg") continue;
    EXPECT_EQ(entry.path().parent_path(), fs::path(dir.path("deep/a/b/out/charts"))) << entry.path();
    if (contains(entry.path().filename().string(), "-peaks.svg")) ++charts;
  }
  EXPECT_EQ(charts, 2u) << "one peaks chart per scenario, apart";
  const std::string md = read_text_file(page);
  EXPECT_FALSE(contains(md, "(charts/..")) << md;
}

TEST(ReportSafety, OutputMustBeAPageNotADeviceOrFolder) {
  TempDir dir;
  dry_record(dir, dir.path("runs/r.json"));
  for (const char* device : {"/dev/null", "/dev/full"}) {
    expect_bounded_usage_error({"report", dir.path("runs"), "--no-rerun", "-o", device}, "not a regular file");
  }
  EXPECT_FALSE(fs::exists("/dev/charts"));
  expect_bounded_usage_error({"report", dir.path("runs"), "--no-rerun", "-o", dir.path("runs")}, "not a regular file");
}

TEST(ReportSafety, NamesAreEscapedInThePageAndCharts) {
  TempDir dir;
  Json record = dry_record(dir, dir.path("runs/r.json"));
  record["scenario"] = std::string("<script>alert(1)</script>\x1b[2J");
  record["variant"] = std::string("<svg onload=alert(1)>\0|x", 24);
  write_file_atomically(dir.path("runs/r.json"), record.dump(2));
  const Result report = run_oomlab_bounded({"report", dir.path("runs"), "--no-rerun", "-o", dir.path("out/report.md")},
                                           {60});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string md = read_text_file(dir.path("out/report.md"));
  EXPECT_FALSE(contains(md, "<script")) << md;
  EXPECT_FALSE(contains(md, "<svg")) << md;
  for (const auto& entry : fs::directory_iterator(dir.path("out/charts"))) {
    for (const std::string& text : {md, read_text_file(entry.path().string())}) {
      for (char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        EXPECT_FALSE(byte < 0x20 && c != '\n') << entry.path() << " holds byte " << int(byte);
      }
    }
  }
  for (char c : report.err) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 && c != '\n') << report.err;
}

TEST(ReportSafety, ARecordClaimingBillionsOfStepsIsNotReRun) {
  TempDir dir;
  Json record = dry_record(dir, dir.path("runs/r.json"));
  record["steps"] = 2000000000;
  write_file_atomically(dir.path("runs/r.json"), record.dump(2));
  const Result report = run_oomlab_bounded({"report", dir.path("runs"), "-o", dir.path("out/report.md")}, {60});
  ASSERT_EQ(report.signal, 0) << "the re-run ran on";
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string md = read_text_file(dir.path("out/report.md"));
  EXPECT_TRUE(contains(md, "No memory timeline for fixed: no trace beside the record, and the record says "
                            "2000000000 steps; srgan_leak runs 1 to")) << md;
}

}  // namespace
}  // namespace oomlab::cli_test
