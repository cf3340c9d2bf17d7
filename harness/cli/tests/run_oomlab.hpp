// Runs the oomlab binary under test and captures its exit code, stdout and stderr.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace oomlab::cli_test {

struct Result {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

Result run_oomlab(const std::vector<std::string>& arguments,
                  const std::map<std::string, std::string>& environment = {});

// Bad input: exactly one "oomlab: error: " line naming `fragment`, exit code 2, nothing on stdout.
void expect_usage_error(const std::vector<std::string>& arguments, const std::string& fragment,
                        const std::map<std::string, std::string>& environment = {});

// oomlab started in the background with its output captured (signal tests); finish() waits.
class RunningOomlab {
 public:
  RunningOomlab(const std::vector<std::string>& arguments,
                const std::map<std::string, std::string>& environment = {});
  ~RunningOomlab();
  RunningOomlab(const RunningOomlab&) = delete;
  RunningOomlab& operator=(const RunningOomlab&) = delete;
  int pid() const { return pid_; }
  Result finish();

 private:
  std::string capture_dir_;
  int pid_ = -1;
};

// A fresh directory under /tmp, removed with its contents at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path(const std::string& name = "") const { return name.empty() ? dir_ : dir_ + "/" + name; }

 private:
  std::string dir_;
};

}  // namespace oomlab::cli_test
