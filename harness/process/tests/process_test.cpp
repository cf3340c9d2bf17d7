#include "harness/process/process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "harness/process/lifetime.hpp"
#include "harness/process/worker.hpp"

namespace oomlab::process {
namespace {

// Workers this test binary can be re-executed as.
OOMLAB_REGISTER_WORKER("test.exit-with", [](const std::vector<std::string>& args) {
  return std::atoi(args.at(0).c_str());
});
OOMLAB_REGISTER_WORKER("test.raise", [](const std::vector<std::string>& args) {
  ::raise(std::atoi(args.at(0).c_str()));
  return 0;
});
OOMLAB_REGISTER_WORKER("test.write-args", [](const std::vector<std::string>& args) {
  std::ofstream out(args.at(0));
  for (std::size_t i = 1; i < args.size(); ++i) out << args[i] << '\n';
  return 0;
});
OOMLAB_REGISTER_WORKER("test.throw", [](const std::vector<std::string>&) -> int {
  throw std::runtime_error("worker failed on purpose");
});
OOMLAB_REGISTER_WORKER("test.sleep", [](const std::vector<std::string>&) {
  ::sleep(60);
  return 0;
});

OOMLAB_REGISTER_WORKER("test.ignore-term-and-sleep", [](const std::vector<std::string>&) {
  ::signal(SIGTERM, SIG_IGN);
  ::sleep(60);
  return 0;
});

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0; }

TEST(ExitStatus, DescribesCodeAndSignal) {
  EXPECT_EQ((ExitStatus{true, 3, 0}.describe()), "exit code 3");
  EXPECT_EQ((ExitStatus{false, 0, SIGKILL}.describe()), "killed by signal 9 (SIGKILL)");
  EXPECT_TRUE((ExitStatus{true, 0, 0}.success()));
  EXPECT_FALSE((ExitStatus{true, 1, 0}.success()));
  EXPECT_FALSE((ExitStatus{false, 0, SIGSEGV}.success()));
}

TEST(SpawnWorker, ReturnsTheWorkersExitCode) {
  for (int code : {0, 3, 42}) {
    Child child = spawn_worker("test.exit-with", {std::to_string(code)});
    ExitStatus status = child.wait();
    EXPECT_TRUE(status.exited);
    EXPECT_EQ(status.code, code);
  }
}

TEST(SpawnWorker, ReportsTheSignalThatKilledIt) {
  Child child = spawn_worker("test.raise", {std::to_string(SIGABRT)});
  ExitStatus status = child.wait();
  EXPECT_FALSE(status.exited);
  EXPECT_EQ(status.signal, SIGABRT);
  EXPECT_NE(status.describe().find("SIGABRT"), std::string::npos);
}

TEST(SpawnWorker, PassesArgumentsUnchanged) {
  const std::string path = ::testing::TempDir() + "spawn_args_" + std::to_string(::getpid());
  const std::vector<std::string> args = {"plain", "with space", "--looks-like-a-flag", ""};
  std::vector<std::string> all = {path};
  all.insert(all.end(), args.begin(), args.end());
  ASSERT_TRUE(spawn_worker("test.write-args", all).wait().success());
  std::ifstream in(path);
  std::vector<std::string> seen;
  for (std::string line; std::getline(in, line);) seen.push_back(line);
  EXPECT_EQ(seen, args);
  std::remove(path.c_str());
}

TEST(SpawnWorker, ExceptionBecomesExitCode70) {
  EXPECT_EQ(spawn_worker("test.throw", {}).wait().code, 70);
}

TEST(SpawnWorker, UnknownWorkerExitsWith2) {
  EXPECT_EQ(spawn_worker("test.no-such-worker", {}).wait().code, 2);
}

TEST(Spawn, MissingProgramThrows) {
  EXPECT_THROW(spawn("/nonexistent/program", {}), std::system_error);
}

TEST(Spawn, EnvironmentIsSetOverTheParents) {
  ::setenv("OOMLAB_SPAWN_TEST_VALUE", "parent", 1);
  const std::string check = "test \"$OOMLAB_SPAWN_TEST_VALUE\" = child && test \"$OOMLAB_SPAWN_TEST_NEW\" = new";
  EXPECT_TRUE(spawn("/bin/sh", {"-c", check}, {"OOMLAB_SPAWN_TEST_VALUE=child", "OOMLAB_SPAWN_TEST_NEW=new"})
                  .wait()
                  .success());
  EXPECT_TRUE(spawn("/bin/sh", {"-c", "test \"$OOMLAB_SPAWN_TEST_VALUE\" = parent"}).wait().success());
  ::unsetenv("OOMLAB_SPAWN_TEST_VALUE");
}

TEST(Child, TryWaitSeesARunningThenAnEndedChild) {
  Child child = spawn_worker("test.sleep", {});
  EXPECT_FALSE(child.try_wait().has_value());
  child.send_signal(SIGTERM);
  ExitStatus status = child.wait();
  EXPECT_EQ(status.signal, SIGTERM);
  ASSERT_TRUE(child.try_wait().has_value());
  EXPECT_EQ(child.try_wait()->signal, SIGTERM);
}

TEST(Child, DestructorKillsAndReapsARunningChild) {
  pid_t pid = -1;
  {
    Child child = spawn_worker("test.sleep", {});
    pid = child.pid();
    EXPECT_TRUE(process_exists(pid));
  }
  EXPECT_FALSE(process_exists(pid));  // reaped: not even a zombie
}

TEST(Child, MoveTransfersOwnership) {
  Child a = spawn_worker("test.exit-with", {"5"});
  Child b = std::move(a);
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.wait().code, 5);
}

TEST(ForkCall, ReturnsCodeAndReport) {
  Child child = fork_call([](int report_fd) {
    write_all(report_fd, "hello from pid " + std::to_string(::getpid()));
    return 7;
  });
  EXPECT_EQ(child.wait().code, 7);
  EXPECT_EQ(child.report(), "hello from pid " + std::to_string(child.pid()));
}

TEST(ForkCall, ChildSeesTheParentsMemory) {
  static int parent_state = 0;
  parent_state = 41;  // set after start-up: a forked child inherits it, a spawned one would not
  Child child = fork_call([](int) { return parent_state + 1; });
  EXPECT_EQ(child.wait().code, 42);
}

TEST(ForkCall, ExceptionIsReportedWithCode70) {
  Child child = fork_call([](int) -> int { throw std::runtime_error("boom"); });
  EXPECT_EQ(child.wait().code, 70);
  EXPECT_NE(child.report().find("boom"), std::string::npos);
}

TEST(WorkerDispatch, NormalArgumentsAreNotAWorker) {
  char prog[] = "oomlab", run[] = "run";
  char* argv[] = {prog, run, nullptr};
  int code = -1;
  EXPECT_FALSE(run_worker_if_requested(2, argv, code));
  EXPECT_EQ(code, -1);
}

TEST(WorkerDispatch, RunsTheNamedWorkerInProcess) {
  char prog[] = "oomlab", flag[] = "--oomlab-worker", name[] = "test.exit-with", arg[] = "9";
  char* argv[] = {prog, flag, name, arg, nullptr};
  int code = -1;
  EXPECT_TRUE(run_worker_if_requested(4, argv, code));
  EXPECT_EQ(code, 9);
}

TEST(WorkerDispatch, MissingNameIsExitCode2) {
  char prog[] = "oomlab", flag[] = "--oomlab-worker";
  char* argv[] = {prog, flag, nullptr};
  int code = -1;
  EXPECT_TRUE(run_worker_if_requested(2, argv, code));
  EXPECT_EQ(code, 2);
}

TEST(WorkerRegistry, RejectsDuplicatesAndEmptyNames) {
  EXPECT_TRUE(has_worker("test.exit-with"));
  EXPECT_THROW(register_worker("test.exit-with", [](const auto&) { return 0; }),
               std::invalid_argument);
  EXPECT_THROW(register_worker("", [](const auto&) { return 0; }), std::invalid_argument);
}

// Whether `pid` still runs (a zombie waiting for its reaper has ended).
bool still_running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

bool ends_within_seconds(pid_t pid, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!still_running(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// An intermediate process starts a grandchild with `start` and reports its pid; then the
// intermediate is killed with SIGKILL (no chance to clean up). Returns the grandchild's pid.
pid_t grandchild_of_a_killed_parent(const std::function<Child()>& start) {
  Child parent = fork_call([&](int) {
    Child grandchild = start();
    ::pause();  // killed here, its Child never destroyed
    return 0;
  });
  // The intermediate's child, from /proc (its report pipe stays open while it lives).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  pid_t grandchild = 0;
  while (grandchild == 0 && std::chrono::steady_clock::now() < deadline) {
    std::ifstream children("/proc/" + std::to_string(parent.pid()) + "/task/" +
                           std::to_string(parent.pid()) + "/children");
    children >> grandchild;
    if (grandchild == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // past its own start-up
  parent.send_signal(SIGKILL);
  parent.wait();
  return grandchild;
}

TEST(Lifetime, ASpawnedWorkerDiesWithItsParent) {
  const pid_t worker = grandchild_of_a_killed_parent([] { return spawn_worker("test.sleep", {}); });
  ASSERT_GT(worker, 0);
  EXPECT_TRUE(ends_within_seconds(worker, 5)) << "worker " << worker << " outlived its parent";
}

TEST(Lifetime, AForkedChildDiesWithItsParent) {
  const pid_t child = grandchild_of_a_killed_parent([] {
    return fork_call([](int) {
      ::sleep(60);
      return 0;
    });
  });
  ASSERT_GT(child, 0);
  EXPECT_TRUE(ends_within_seconds(child, 5)) << "child " << child << " outlived its parent";
}

TEST(Lifetime, AnInterruptIsForwardedToTheChildThenThrown) {
  InterruptGuard guard;
  Child child = spawn_worker("test.sleep", {});
  ::raise(SIGINT);  // recorded by the guard, not fatal
  EXPECT_EQ(pending_interrupt(), SIGINT);
  try {
    wait_interruptibly(child, 0);
    FAIL() << "an interrupt must end the wait";
  } catch (const Interrupted& interrupted) {
    EXPECT_EQ(interrupted.signal, SIGINT);
    EXPECT_EQ(interrupted.exit_code(), 130);
    EXPECT_EQ(interrupted.describe(), "interrupted by SIGINT");
  }
  ASSERT_TRUE(child.try_wait().has_value()) << "the child is reaped before the throw";
  EXPECT_EQ(child.try_wait()->signal, SIGINT);
}

TEST(Lifetime, AChildThatIgnoresTheForwardedSignalIsKilledAfterTheGrace) {
  InterruptGuard guard;
  Child child = spawn_worker("test.ignore-term-and-sleep", {});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // its handler is set
  ::raise(SIGTERM);
  EXPECT_THROW(wait_interruptibly(child, 0, 0.2), Interrupted);
  EXPECT_EQ(child.try_wait()->signal, SIGKILL);
}

TEST(Lifetime, TheTimeLimitStillKills) {
  Child child = spawn_worker("test.sleep", {});
  const WaitResult result = wait_interruptibly(child, 0.2);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.status.signal, SIGKILL);
}

// --timeout 1e10 (past what a nanosecond clock counts from now) overflowed into a deadline in
// the past: the child was killed at once and reported as a crash. Such a limit is no limit.
TEST(Lifetime, ATimeLimitPastTheClocksRangeIsNoLimit) {
  for (const double huge : {1e10, 1e300}) {
    Child child = spawn_worker("test.exit-with", {"3"});
    const WaitResult result = wait_interruptibly(child, huge);
    EXPECT_FALSE(result.timed_out) << huge;
    EXPECT_EQ(result.status.code, 3) << huge;
  }
}

}  // namespace
}  // namespace oomlab::process
