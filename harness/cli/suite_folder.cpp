#include "harness/cli/suite_folder.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "harness/cli/commands.hpp"
#include "harness/runner/atomic_file.hpp"

namespace oomlab::cli {
namespace {

namespace fs = std::filesystem;

// A name an earlier suite.json may list for removal: a plain JSON file name inside the folder,
// never a path (a hostile suite.json must not reach outside it).
bool is_record_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != ".." &&
         name != SuiteFolder::kSummaryName && name.size() > 5 &&
         name.compare(name.size() - 5, 5, ".json") == 0;
}

// Every record name an earlier suite.json lists (as run rows or as planned records).
std::set<std::string> listed_records(const nlohmann::ordered_json& summary) {
  std::set<std::string> names;
  const auto add = [&](const nlohmann::ordered_json& name) {
    if (name.is_string() && is_record_name(name.get<std::string>())) names.insert(name.get<std::string>());
  };
  if (!summary.is_object()) return names;
  if (auto runs = summary.find("runs"); runs != summary.end() && runs->is_array()) {
    for (const auto& run : *runs) {
      if (run.is_object() && run.contains("record")) add(run.at("record"));
    }
  }
  if (auto planned = summary.find("planned_records"); planned != summary.end() && planned->is_array()) {
    for (const auto& name : *planned) add(name);
  }
  return names;
}

}  // namespace

SuiteFolder::SuiteFolder(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw UsageError("--out-dir needs a folder name");
  std::error_code error;
  fs::create_directories(path_, error);
  if (error || !fs::is_directory(path_, error)) {
    throw UsageError("--out-dir " + path_ + ": " +
                     (error ? error.message() : std::string("not a directory")));
  }
  require_writable("--out-dir", file(kSummaryName));

  const std::string summary_path = file(kSummaryName);
  if (!fs::exists(summary_path, error)) {
    if (!fs::is_empty(path_, error)) {
      throw UsageError("--out-dir " + path_ + " holds files that no oomlab suite wrote (no " +
                       kSummaryName + "); name a new or empty folder");
    }
    return;
  }
  nlohmann::ordered_json previous;
  try {
    previous = nlohmann::ordered_json::parse(read_text_file(summary_path));
  } catch (const std::exception&) {
    throw UsageError("--out-dir " + path_ + ": its " + kSummaryName +
                     " is not a suite summary oomlab can read; remove it or name another folder");
  }
  for (const std::string& name : listed_records(previous)) {
    struct stat info {};
    const std::string record = file(name);
    if (::lstat(record.c_str(), &info) == 0 && S_ISREG(info.st_mode)) ::unlink(record.c_str());
  }
}

void SuiteFolder::write_summary(nlohmann::ordered_json summary, bool complete,
                                const std::vector<std::string>& planned_records) const {
  summary["complete"] = complete;
  summary["planned_records"] = planned_records;
  try {
    write_file_atomically(file(kSummaryName), summary.dump(2) + "\n");
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace oomlab::cli
