#include "harness/cli/tests/bounded_oomlab.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

#include "harness/runner/atomic_file.hpp"

namespace oomlab::cli_test {

Result run_oomlab_bounded(const std::vector<std::string>& arguments, const Bounds& bounds,
                          const std::map<std::string, std::string>& environment,
                          const std::function<void()>& in_child) {
  const TempDir capture;
  const std::string out_path = capture.path("stdout"), err_path = capture.path("stderr");
  std::vector<std::string> argv_strings = {OOMLAB_BINARY};
  argv_strings.insert(argv_strings.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) ::_exit(126);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    for (const auto& [name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
    const rlimit memory{bounds.address_space_bytes, bounds.address_space_bytes};
    ::setrlimit(RLIMIT_AS, &memory);
    if (in_child) in_child();
    ::alarm(bounds.seconds);  // survives exec: SIGALRM ends a run that does not
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) throw std::runtime_error("waitpid failed");
  Result result;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = read_text_file(out_path);
  result.err = read_text_file(err_path);
  return result;
}

void expect_bounded_usage_error(const std::vector<std::string>& arguments, const std::string& fragment,
                                const Bounds& bounds) {
  std::string command = "oomlab";
  for (const auto& a : arguments) command += " " + a;
  SCOPED_TRACE(command);
  const Result result = run_oomlab_bounded(arguments, bounds);
  EXPECT_EQ(result.signal, 0) << "killed: over " << bounds.seconds << " s or out of memory";
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err.rfind("oomlab: error: ", 0), 0u) << result.err;
  ASSERT_FALSE(result.err.empty());
  EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << "more than one line:\n" << result.err;
  EXPECT_NE(result.err.find(fragment), std::string::npos) << result.err;
  EXPECT_EQ(result.out, "");
}

}  // namespace oomlab::cli_test
