// A stopped oomlab leaves nothing running and nothing behind: SIGINT and SIGTERM reach the
// variant's child, oomlab waits for it, removes its temp folder and exits 130 / 143; a parent
// killed with SIGKILL takes its child with it (PR_SET_PDEATHSIG), and the next run removes the
// folder the killed one could not. With OOMLAB_SIGNAL_TEST_DEVICE=cuda (the gpu-labelled copy of
// this test) the child holds a CUDA context: the "zombie process holding the GPU" case.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/device/device.hpp"
#include "harness/runner/atomic_file.hpp"

namespace oomlab::cli_test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

#ifdef OOMLAB_SIGNAL_TEST_ON_GPU
const std::string kDevice = "cuda";
const std::string kScale = "small";
#define REQUIRE_DEVICE() \
  if (!cuda_available()) GTEST_SKIP() << "no usable CUDA device"
#else
const std::string kDevice = "host";
const std::string kScale = "tiny";
#define REQUIRE_DEVICE() (void)0
#endif

// A variant that fits and runs until stopped: far more steps than it could finish.
std::vector<std::string> endless_run() {
  return {"run", "fragmentation", "--variant", "fixed-max-split", "--device", kDevice,
          "--scale", kScale, "--steps", "100000000"};
}

// The state letter of /proc/PID/stat ('Z' zombie), or nullopt when the process is gone.
std::optional<char> process_state(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const auto paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return std::nullopt;
  return text[paren + 2];
}

int parent_of(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const auto paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream rest(text.substr(paren + 2));
  char state = 0;
  int ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

bool is_running(int pid) {
  const auto state = process_state(pid);
  return state && *state != 'Z' && *state != 'X';
}

// The variant's child of oomlab `parent` (its `__child` process), once it has started.
int wait_for_child(int parent) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string name = entry.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const int pid = std::stoi(name);
      if (parent_of(pid) != parent) continue;
      std::ifstream cmdline(entry.path() / "cmdline");
      std::string args((std::istreambuf_iterator<char>(cmdline)), {});
      if (args.find("__child") != std::string::npos) return pid;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

bool ends_within(int pid, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (!is_running(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::vector<std::string> child_folders(const TempDir& tmp) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    const std::string name = entry.path().filename();
    if (name.rfind("oomlab-child-", 0) == 0) names.push_back(name);
  }
  return names;
}

void expect_stopped_cleanly(int signal, int exit_code) {
  REQUIRE_DEVICE();
  TempDir tmp;
  RunningOomlab oomlab(endless_run(), {{"TMPDIR", tmp.path()}});
  const int child = wait_for_child(oomlab.pid());
  ASSERT_GT(child, 0) << "the variant's child never started";
  ASSERT_EQ(child_folders(tmp).size(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // into its steps
  ASSERT_EQ(::kill(oomlab.pid(), signal), 0);
  const Result result = oomlab.finish();
  EXPECT_EQ(result.exit_code, exit_code) << result.err;
  EXPECT_NE(result.err.find("interrupted by SIG"), std::string::npos) << result.err;
  EXPECT_TRUE(ends_within(child, std::chrono::seconds(5))) << "child " << child << " still runs";
  EXPECT_TRUE(child_folders(tmp).empty()) << "temp folder left behind";
}

TEST(CliSignals, SigintStopsTheChildAndExits130) { expect_stopped_cleanly(SIGINT, 130); }

TEST(CliSignals, SigtermStopsTheChildAndExits143) { expect_stopped_cleanly(SIGTERM, 143); }

TEST(CliSignals, AChildDiesWithAParentKilledHard) {
  REQUIRE_DEVICE();
  TempDir tmp;
  int child = 0;
  {
    RunningOomlab oomlab(endless_run(), {{"TMPDIR", tmp.path()}});
    child = wait_for_child(oomlab.pid());
    ASSERT_GT(child, 0);
    ASSERT_EQ(::kill(oomlab.pid(), SIGKILL), 0);
    const Result result = oomlab.finish();
    EXPECT_EQ(result.signal, SIGKILL);
  }
  EXPECT_TRUE(ends_within(child, std::chrono::seconds(5))) << "orphaned child " << child << " still runs";
  // The killed parent could not remove its folder; the next run does.
  ASSERT_EQ(child_folders(tmp).size(), 1u);
  Result next = run_oomlab({"run", "fragmentation", "--variant", "broken", "--device", "dry"},
                           {{"TMPDIR", tmp.path()}});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_TRUE(child_folders(tmp).empty());
}

TEST(CliSignals, AnInterruptedSuiteSaysItIsIncomplete) {
  REQUIRE_DEVICE();
  TempDir tmp, out;
  RunningOomlab oomlab({"suite", "--device", kDevice, "--scale", kScale, "--out-dir", out.path()},
                       {{"TMPDIR", tmp.path()}});
  ASSERT_GT(wait_for_child(oomlab.pid()), 0);
  ASSERT_EQ(::kill(oomlab.pid(), SIGTERM), 0);
  const Result result = oomlab.finish();
  EXPECT_EQ(result.exit_code, 143) << result.err;
  auto summary = nlohmann::json::parse(read_text_file(out.path("suite.json")));
  EXPECT_EQ(summary["complete"], false);
  EXPECT_LT(summary["runs"].size(), summary["planned_records"].size());
  EXPECT_TRUE(child_folders(tmp).empty());
}

}  // namespace
}  // namespace oomlab::cli_test
