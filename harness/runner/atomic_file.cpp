#include "harness/runner/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
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

[[noreturn]] void fail(const std::string& path, const char* what, int error) {
  throw std::runtime_error("cannot write " + path + ": " + what + ": " + std::strerror(error));
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view contents) {
  if (path.empty()) throw std::runtime_error("cannot write a file with an empty path");
  const std::string directory = directory_of(path);
  std::string temp = directory + "/." + file_name_of(path) + ".tmp.XXXXXX";
  std::vector<char> temp_buffer(temp.begin(), temp.end());
  temp_buffer.push_back('\0');
  int fd = ::mkstemp(temp_buffer.data());
  if (fd < 0) fail(path, "creating a temp file", errno);
  temp.assign(temp_buffer.data());

  auto abandon = [&](const char* what) {
    int error = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    fail(path, what, error);
  };
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      abandon("writing");
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
  // mkstemp makes 0600 files; a result file should read like any other file the user made.
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) abandon("setting permissions");
  if (::fsync(fd) != 0) abandon("syncing");
  if (::close(fd) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    fail(path, "closing", error);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    fail(path, "renaming the temp file", error);
  }
  // Make the rename itself durable; failing here leaves a complete file, so it is not an error.
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    (void)::fsync(dir_fd);
    ::close(dir_fd);
  }
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
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) return "is a directory";
  const std::string directory = directory_of(path);
  if (::stat(directory.c_str(), &info) != 0) {
    return "directory " + directory + ": " + std::strerror(errno);
  }
  if (!S_ISDIR(info.st_mode)) return directory + " is not a directory";
  if (::access(directory.c_str(), W_OK | X_OK) != 0) {
    return "directory " + directory + ": " + std::strerror(errno);
  }
  return {};
}

}  // namespace oomlab
