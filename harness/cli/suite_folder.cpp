#include "harness/cli/suite_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "harness/cli/commands.hpp"
#include "harness/memory/user_text.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/json_text.hpp"
#include "harness/runner/run_record.hpp"

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

// Whether `folder` holds nothing but the lock file: what a folder looks like before its first suite.
bool holds_only_the_lock(const std::string& folder) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    if (entry.path().filename() != SuiteFolder::kLockName) return false;
  }
  return !error;
}

// Takes the folder's lock or throws UsageError naming its holder. The file is opened without
// following a link and never truncated before the lock is ours (it names the holder).
int lock_folder(const std::string& folder) {
  const std::string path = folder + "/" + SuiteFolder::kLockName;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw UsageError("--out-dir " + folder + ": cannot open its lock file " + path + " (" + std::strerror(errno) + ")");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char holder[256] = {};
    const ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    std::string who = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : "";
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    throw UsageError("--out-dir " + folder + " is in use by another oomlab suite" +
                     (who.empty() ? std::string() : " (" + quote_user_text(who, 120) + ")") +
                     "; wait for it to end or name another folder");
  }
  const std::string me = "pid " + std::to_string(::getpid()) + ", started " + utc_timestamp() + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
    // The lock is held all the same; only the note for a second suite is missing.
  }
  return fd;
}

}  // namespace

SuiteFolder::~SuiteFolder() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock; the file stays for the next suite
}

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
  if (!fs::exists(summary_path, error) && !holds_only_the_lock(path_)) {
    throw UsageError("--out-dir " + path_ + " holds files that no oomlab suite wrote (no " +
                     kSummaryName + "); name a new or empty folder");
  }
  lock_fd_ = lock_folder(path_);
  if (!fs::exists(summary_path, error)) return;
  nlohmann::ordered_json previous;
  try {
    previous = nlohmann::ordered_json::parse(read_text_file(summary_path));
  } catch (const std::exception&) {
    ::close(lock_fd_);
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
    write_file_atomically(file(kSummaryName), json_text(summary, 2) + "\n");
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace oomlab::cli
