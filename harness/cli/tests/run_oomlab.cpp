#include "harness/cli/tests/run_oomlab.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "harness/runner/atomic_file.hpp"

namespace oomlab::cli_test {

TempDir::TempDir() {
  char pattern[] = "/tmp/oomlab-cli-test-XXXXXX";
  if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

RunningOomlab::RunningOomlab(const std::vector<std::string>& arguments,
                             const std::map<std::string, std::string>& environment) {
  char pattern[] = "/tmp/oomlab-cli-capture-XXXXXX";
  if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
  capture_dir_ = pattern;
  const std::string out_path = capture_dir_ + "/stdout", err_path = capture_dir_ + "/stderr";
  std::vector<std::string> argv_strings = {OOMLAB_BINARY};
  argv_strings.insert(argv_strings.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) ::_exit(126);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    for (const auto& [name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
}

RunningOomlab::~RunningOomlab() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  std::error_code ignored;
  std::filesystem::remove_all(capture_dir_, ignored);
}

Result RunningOomlab::finish() {
  int status = 0;
  if (::waitpid(pid_, &status, 0) != pid_) throw std::runtime_error("waitpid failed");
  pid_ = -1;
  Result result;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = read_text_file(capture_dir_ + "/stdout");
  result.err = read_text_file(capture_dir_ + "/stderr");
  return result;
}

Result run_oomlab(const std::vector<std::string>& arguments,
                  const std::map<std::string, std::string>& environment) {
  return RunningOomlab(arguments, environment).finish();
}

void expect_usage_error(const std::vector<std::string>& arguments, const std::string& fragment,
                        const std::map<std::string, std::string>& environment) {
  std::string command = "oomlab";
  for (const auto& a : arguments) command += " " + a;
  SCOPED_TRACE(command);
  Result result = run_oomlab(arguments, environment);
  EXPECT_EQ(result.signal, 0);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  const std::string prefix = "oomlab: error: ";
  EXPECT_EQ(result.err.rfind(prefix, 0), 0u) << result.err;
  ASSERT_FALSE(result.err.empty());
  EXPECT_EQ(result.err.back(), '\n');
  EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << "more than one line:\n" << result.err;
  EXPECT_NE(result.err.find(fragment), std::string::npos) << result.err;
  EXPECT_EQ(result.out, "") << "bad input must not run anything";
}

}  // namespace oomlab::cli_test
