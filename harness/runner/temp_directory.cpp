// Private temporary folders (mkdtemp), and removing those that killed processes left behind.
#include "harness/runner/temp_directory.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace oomlab {

namespace {

// Unlinks the entries of the folder `path` (never following a link) and removes it. The folders
// it is used on hold plain files only; anything it cannot remove stays.
void remove_flat_directory(const std::string& path) {
  if (DIR* dir = ::opendir(path.c_str())) {
    while (const dirent* entry = ::readdir(dir)) {
      if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
        ::unlinkat(::dirfd(dir), entry->d_name, 0);
      }
    }
    ::closedir(dir);
  }
  ::rmdir(path.c_str());
}

// "<prefix><pid>-XXXXXX" folders of this user whose process is gone.
void remove_stale_temp_directories(const std::string& root, const std::string& prefix) {
  DIR* dir = ::opendir(root.c_str());
  if (!dir) return;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || *end != '-' || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const std::string path = root + "/" + name;
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid()) continue;
    remove_flat_directory(path);
  }
  ::closedir(dir);
}

// mkdtemp under root; empty on failure with `why` set.
std::string make_private_folder(const std::string& root, const std::string& prefix, std::string& why) {
  std::string pattern = root + "/" + prefix + std::to_string(::getpid()) + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!::mkdtemp(buffer.data())) {
    why = "cannot create a temporary folder " + pattern + ": " + std::strerror(errno) +
          " (TMPDIR names the folder for them)";
    return {};
  }
  return buffer.data();
}

}  // namespace

std::string temp_root() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

std::string why_no_temp_directory() {
  std::string why;
  const std::string probe = make_private_folder(temp_root(), "oomlab-probe-", why);
  if (!probe.empty()) ::rmdir(probe.c_str());
  return why;
}

void ensure_private_folder(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    throw std::runtime_error("cannot create the folder " + path + ": " + std::strerror(errno));
  }
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    throw std::runtime_error("cannot read the folder " + path + ": " + std::strerror(errno));
  }
  const char* why = !S_ISDIR(info.st_mode)              ? "it is not a folder (a link or a file)"
                    : info.st_uid != ::geteuid()        ? "it belongs to another user"
                    : (info.st_mode & (S_IWGRP | S_IWOTH)) ? "other users may write to it"
                                                         : nullptr;
  if (why) throw std::runtime_error("refusing the folder " + path + ": " + why + "; remove it or choose another");
}

TempDirectory::TempDirectory(const std::string& prefix) {
  const std::string root = temp_root();
  remove_stale_temp_directories(root, prefix);
  std::string why;
  path_ = make_private_folder(root, prefix, why);
  if (path_.empty()) throw std::runtime_error(why);
}

TempDirectory::~TempDirectory() {
  // What the user of the folder wrote, and a temp file a killed child may have left mid-write.
  remove_flat_directory(path_);
}

}  // namespace oomlab
