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
