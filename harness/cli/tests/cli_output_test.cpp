// What oomlab writes and where: a result never replaces what the user did not mean to replace
// (a device node, a link, a FIFO), a path that cannot be written is refused before the run, a
// trace that fails is a warning and never the run's outcome, and every setting of run and suite
// is checked before anything runs. The suite's folder holds one suite run, marked complete.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/runner/atomic_file.hpp"

namespace oomlab::cli_test {
namespace {

namespace fs = std::filesystem;

// A scenario variant that ends quickly on dry; its story is an OOM.
const std::vector<std::string> kQuickRun = {"run", "fragmentation", "--variant", "broken",
                                            "--device", "dry", "--scale", "tiny"};

std::vector<std::string> quick_run_with(std::vector<std::string> extra) {
  std::vector<std::string> arguments = kQuickRun;
  arguments.insert(arguments.end(), extra.begin(), extra.end());
  return arguments;
}

TEST(CliOutput, OutToDevFullFailsLoudlyAndLeavesTheDevice) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  Result result = run_oomlab(quick_run_with({"--out", "/dev/full"}));
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("/dev/full"), std::string::npos) << result.err;
  EXPECT_EQ(fs::status("/dev/full").type(), fs::file_type::character);
}

TEST(CliOutput, OutThroughASymlinkWritesItsTarget) {
  TempDir dir;
  fs::create_symlink("real.json", dir.path("link.json"));
  Result result = run_oomlab(quick_run_with({"--out", dir.path("link.json")}));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(fs::is_symlink(dir.path("link.json")));
  auto record = nlohmann::json::parse(read_text_file(dir.path("real.json")));
  EXPECT_EQ(record["variant"], "broken");
}

TEST(CliOutput, OutIntoAFifoReachesItsReader) {
  TempDir dir;
  const std::string fifo = dir.path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = read_text_file(fifo); });
  Result result = run_oomlab(quick_run_with({"--out", fifo}));
  reader.join();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(nlohmann::json::parse(received)["variant"], "broken");
  EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo);
}

TEST(CliOutput, UnwritablePathsAreRefusedBeforeTheRun) {
  expect_usage_error(quick_run_with({"--out", "/proc/oomlab-r.json"}), "--out");
  expect_usage_error(quick_run_with({"--trace", "/proc/oomlab-t.json"}), "--trace");
  TempDir dir;
  expect_usage_error(quick_run_with({"--out", dir.path()}), "directory");
}

TEST(CliOutput, ATraceWriteFailureIsAWarningNotTheOutcome) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  TempDir dir;
  Result result = run_oomlab(quick_run_with({"--trace", "/dev/full", "--out", dir.path("r.json")}));
  EXPECT_EQ(result.exit_code, 2) << "a requested file was not written\n" << result.err;
  EXPECT_NE(result.err.find("oomlab: warning: fragmentation/broken: trace not written"),
            std::string::npos) << result.err;
  auto record = nlohmann::json::parse(read_text_file(dir.path("r.json")));
  EXPECT_EQ(record["outcome"]["status"], "oom");  // the story's outcome, not `error`
  EXPECT_EQ(record["matches_expectation"], true);
  EXPECT_EQ(fs::status("/dev/full").type(), fs::file_type::character);
}

TEST(CliOutput, SettingsWithoutAMeaningAreRejected) {
  expect_usage_error(quick_run_with({"--timeout", "nan"}), "--timeout");
  expect_usage_error(quick_run_with({"--timeout", "inf"}), "--timeout");
  expect_usage_error({"suite", "--device", "dry", "--timeout", "nan"}, "--timeout");
  expect_usage_error(quick_run_with({"--budget", ""}), "--budget");
}

// A suite folder as an earlier run left it: its summary, its records, and a file of the user's.
void make_previous_suite(const TempDir& dir) {
  const nlohmann::json summary = {
      {"schema_version", 2}, {"all_match", true},
      {"runs", {{{"record", "stale.broken.dry-full.json"}},
                {{"record", "../victim.json"}},    // a path: never followed out of the folder
                {{"record", "victim.json"}}}}};    // a link (made by the test): not a record
  write_file_atomically(dir.path("suite.json"), summary.dump());
  write_file_atomically(dir.path("stale.broken.dry-full.json"), "{}");
  write_file_atomically(dir.path("notes.md"), "mine\n");
}

TEST(CliSuiteFolder, BadSettingsStopTheSuiteBeforeItTouchesTheFolder) {
  TempDir dir;
  make_previous_suite(dir);
  const std::string before = read_text_file(dir.path("suite.json"));
  expect_usage_error({"suite", "--device", "dry", "--out-dir", dir.path()}, "OOMLAB_ALLOC_CONF",
                     {{"OOMLAB_ALLOC_CONF", "foo:1"}});
  EXPECT_EQ(read_text_file(dir.path("suite.json")), before);
  EXPECT_TRUE(fs::exists(dir.path("stale.broken.dry-full.json")));
}

TEST(CliSuiteFolder, ARunReplacesThePreviousSuitesRecordsAndNothingElse) {
  TempDir outside;
  write_file_atomically(outside.path("victim.json"), "keep\n");
  TempDir dir;
  make_previous_suite(dir);
  fs::create_symlink(outside.path("victim.json"), dir.path("victim.json"));
  Result result = run_oomlab({"suite", "--device", "dry", "--scale", "tiny", "--out-dir", dir.path()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(fs::exists(dir.path("stale.broken.dry-full.json"))) << "a record no run of this suite made";
  EXPECT_EQ(read_text_file(dir.path("notes.md")), "mine\n");
  EXPECT_EQ(read_text_file(outside.path("victim.json")), "keep\n");
  auto summary = nlohmann::json::parse(read_text_file(dir.path("suite.json")));
  EXPECT_EQ(summary["complete"], true);
  EXPECT_EQ(summary["runs"].size(), summary["planned_records"].size());
  for (const auto& run : summary["runs"]) {
    EXPECT_TRUE(fs::exists(dir.path(run["record"].get<std::string>()))) << run["record"];
  }
  EXPECT_EQ(summary["plan"][0]["device"], "dry");
}

TEST(CliSuiteFolder, AFolderOfSomeoneElsesFilesIsRefused) {
  TempDir dir;
  write_file_atomically(dir.path("thesis.tex"), "mine\n");
  expect_usage_error({"suite", "--device", "dry", "--out-dir", dir.path()}, "no oomlab suite wrote");
  EXPECT_EQ(read_text_file(dir.path("thesis.tex")), "mine\n");
  write_file_atomically(dir.path("suite.json"), "not json");
  expect_usage_error({"suite", "--device", "dry", "--out-dir", dir.path()}, "suite.json");
}

// A TMPDIR that names no folder was reported as the variant's error (exit 1, a failed run);
// it is the user's setting: one line naming TMPDIR, exit 2, before anything runs.
TEST(CliOutput, ATmpdirThatCannotHoldAFolderIsAUsageError) {
  expect_usage_error(kQuickRun, "TMPDIR", {{"TMPDIR", "/nonexistent/oomlab"}});
  TempDir dir;
  expect_usage_error({"suite", "--device", "dry", "--scale", "tiny", "--out-dir", dir.path()}, "TMPDIR",
                     {{"TMPDIR", "/nonexistent/oomlab"}});
}

// train7b without --variant interleaved ~20 unlabelled lines from its seven variants: every
// line a variant writes now names it.
TEST(CliOutput, EveryNoteOfSeveralVariantsNamesItsVariant) {
  Result result = run_oomlab({"run", "train7b", "--device", "dry", "--scale", "tiny"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::size_t start = 0, lines = 0;
  while (start < result.err.size()) {
    const std::size_t end = result.err.find('\n', start);
    const std::string line = result.err.substr(start, end - start);
    start = end == std::string::npos ? result.err.size() : end + 1;
    if (line.empty()) continue;
    ++lines;
    EXPECT_EQ(line.rfind("train7b/", 0), 0u) << line;
  }
  EXPECT_GE(lines, 7u) << result.err;
}

// Two suites on one folder each deleted the other's records at start, and both said "complete".
// A suite holds the folder's lock while it runs; a second one names the holder and exits 2,
// touching nothing. Here the test holds the lock as a running suite would.
TEST(CliSuiteFolder, ASecondSuiteOnABusyFolderIsRefusedAndTouchesNothing) {
  TempDir dir;
  make_previous_suite(dir);
  const std::string before = read_text_file(dir.path("suite.json"));
  const int lock = ::open(dir.path(".suite.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(::flock(lock, LOCK_EX | LOCK_NB), 0);
  const std::string holder = "pid 4242, started 2026-12-03T08:00:00Z\n";
  ASSERT_EQ(::write(lock, holder.data(), holder.size()), static_cast<ssize_t>(holder.size()));
  expect_usage_error({"suite", "--device", "dry", "--scale", "tiny", "--out-dir", dir.path()},
                     "in use by another oomlab suite ('pid 4242");
  EXPECT_EQ(read_text_file(dir.path("suite.json")), before);
  EXPECT_TRUE(fs::exists(dir.path("stale.broken.dry-full.json"))) << "the running suite's record";
  ::close(lock);  // the holder ends (however it ends: the kernel drops the lock)
  Result result = run_oomlab({"suite", "--device", "dry", "--scale", "tiny", "--out-dir", dir.path()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(fs::exists(dir.path("stale.broken.dry-full.json")));
}

TEST(CliSuiteFolder, AFolderHoldingOnlyALeftLockIsANewFolder) {
  TempDir dir;
  write_file_atomically(dir.path(".suite.lock"), "pid 1, started long ago\n");
  Result result = run_oomlab({"suite", "--device", "dry", "--scale", "tiny", "--out-dir", dir.path()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(fs::exists(dir.path("suite.json")));
}

}  // namespace
}  // namespace oomlab::cli_test
