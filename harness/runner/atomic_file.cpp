#include "harness/runner/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace oomlab {

namespace {

std::string directory_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string file_name_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

[[noreturn]] void fail(const std::string& path, const std::string& what, int error) {
  throw std::runtime_error("cannot write " + path + ": " + what + ": " + std::strerror(error));
}

// The path a write really goes to: symlinks followed (a dangling one to the file it names), at
// most as many as the kernel follows.
std::string follow_links(const std::string& path) {
  std::string current = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat info {};
    if (::lstat(current.c_str(), &info) != 0 || !S_ISLNK(info.st_mode)) return current;
    std::vector<char> target(PATH_MAX + 1);
    const ssize_t n = ::readlink(current.c_str(), target.data(), PATH_MAX);
    if (n <= 0) return current;
    std::string next(target.data(), static_cast<std::size_t>(n));
    current = next.front() == '/' ? next : directory_of(current) + "/" + next;
  }
  errno = ELOOP;
  fail(path, "following symlinks", ELOOP);
}

// What is at a (link-free) path now: nothing (nullopt) or its mode.
std::optional<mode_t> existing_mode(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  return info.st_mode;
}

bool written_in_place(mode_t mode) { return S_ISFIFO(mode) || S_ISCHR(mode); }

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// Writes all of `contents`; on an error calls `abandon` (which throws) with what failed.
void write_all(int fd, std::string_view contents, const std::function<void(const char*)>& abandon) {
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      abandon("writing");
    }
    if (written == 0) {
      errno = EIO;
      abandon("writing");
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
}

// Writes into an existing FIFO or character device as a shell redirection would.
void write_in_place(const std::string& target, const std::string& path, std::string_view contents) {
  int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) fail(path, "opening", errno);
  write_all(fd, contents, [&](const char* what) {
    const int error = errno;
    ::close(fd);
    fail(path, what, error);
  });
  if (::close(fd) != 0) fail(path, "closing", errno);
}

// A new or replaced regular file: temp file, fsync, rename.
void replace_atomically(const std::string& target, const std::string& path, std::string_view contents,
                        std::optional<mode_t> old_mode) {
  const std::string directory = directory_of(target);
  std::string temp = directory + "/." + file_name_of(target) + ".tmp.XXXXXX";
  std::vector<char> temp_buffer(temp.begin(), temp.end());
  temp_buffer.push_back('\0');
  int fd = ::mkstemp(temp_buffer.data());
  if (fd < 0) fail(path, "creating a temp file", errno);
  temp.assign(temp_buffer.data());

  auto abandon = [&](const char* what) {
    const int error = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    fail(path, what, error);
  };
  write_all(fd, contents, abandon);
  // mkstemp makes 0600 files: a replaced file keeps its permissions, a new one gets the usual.
  mode_t mask = ::umask(0);
  ::umask(mask);
  const mode_t mode = old_mode ? (*old_mode & 07777) : (0666 & ~mask);
  if (::fchmod(fd, mode) != 0) abandon("setting permissions");
  if (::fsync(fd) != 0) abandon("syncing");
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail(path, "closing", error);
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail(path, "renaming the temp file", error);
  }
  // Make the rename itself durable; failing here leaves a complete file, so it is not an error.
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    (void)::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view contents) {
  if (path.empty()) throw std::runtime_error("cannot write a file with an empty path");
  const std::string target = follow_links(path);
  const std::optional<mode_t> mode = existing_mode(target);
  if (mode && written_in_place(*mode)) return write_in_place(target, path, contents);
  if (mode && !S_ISREG(*mode)) {
    throw std::runtime_error("cannot write " + path + ": it is " + kind_of(*mode) +
                             ", not a file oomlab replaces");
  }
  replace_atomically(target, path, contents, mode);
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read " + path);
  return buffer.str();
}

std::string why_not_writable(const std::string& path) {
  if (path.empty()) return "empty path";
  std::string target;
  try {
    target = follow_links(path);
  } catch (const std::runtime_error&) {
    return "too many levels of symbolic links";
  }
  if (const std::optional<mode_t> mode = existing_mode(target)) {
    if (written_in_place(*mode)) {
      return ::access(target.c_str(), W_OK) == 0 ? "" : std::strerror(errno);
    }
    if (!S_ISREG(*mode)) return std::string("it is ") + kind_of(*mode);
  }
  const std::string directory = directory_of(target);
  struct stat info {};
  if (::stat(directory.c_str(), &info) != 0) {
    return "directory " + directory + ": " + std::strerror(errno);
  }
  if (!S_ISDIR(info.st_mode)) return directory + " is not a directory";
  // Try what the write will do; access() says yes to root on file systems that refuse files.
  std::string probe = directory + "/.oomlab-write-probe.XXXXXX";
  std::vector<char> buffer(probe.begin(), probe.end());
  buffer.push_back('\0');
  const int fd = ::mkstemp(buffer.data());
  if (fd < 0) return "cannot create a file in " + directory + ": " + std::strerror(errno);
  ::close(fd);
  ::unlink(buffer.data());
  return {};
}

}  // namespace oomlab
