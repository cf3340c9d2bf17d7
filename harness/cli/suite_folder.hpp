// The suite's output folder: it only ever holds what one suite run wrote, and says whether that
// run finished. suite.json is written first, marked "complete": false and listing every record
// the run may write, then after each run; "complete": true only once every run ended. Starting
// a suite removes the records an earlier suite listed there (and nothing else), so no record
// from another run is left looking current; a folder holding files that no suite wrote is
// refused, never cleared. While a SuiteFolder lives it holds an exclusive lock on the folder
// (flock on its .suite.lock, released when the process ends however it ends), so a second suite
// started on the same folder says which process holds it instead of deleting its records.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace oomlab::cli {

class SuiteFolder {
 public:
  // Creates `path` if needed, checks it can be written and removes the previous suite's records.
  // Throws UsageError naming the folder when it cannot be used.
  explicit SuiteFolder(std::string path);
  ~SuiteFolder();
  SuiteFolder(const SuiteFolder&) = delete;
  SuiteFolder& operator=(const SuiteFolder&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  // Writes suite.json: `summary` plus "complete" and "planned_records".
  void write_summary(nlohmann::ordered_json summary, bool complete,
                     const std::vector<std::string>& planned_records) const;

  static constexpr const char* kSummaryName = "suite.json";
  static constexpr const char* kLockName = ".suite.lock";

 private:
  std::string path_;
  int lock_fd_ = -1;
};

}  // namespace oomlab::cli
