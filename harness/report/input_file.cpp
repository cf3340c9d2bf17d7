#include "harness/report/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness/memory/size.hpp"
#include "harness/report/input_error.hpp"

namespace oomlab::report {

namespace {

class OpenFile {
 public:
  // O_NONBLOCK: opening a FIFO with no writer must not wait; the file is checked before reading.
  explicit OpenFile(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)) {
    if (fd_ < 0) throw InputError(path + ": cannot read (" + std::strerror(errno) + ")");
  }
  ~OpenFile() { ::close(fd_); }
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

std::string over_cap(const std::string& path, std::uint64_t max_bytes, const std::string& what) {
  return path + ": larger than the " + format_size(max_bytes) + " a " + what + " may hold; not read";
}

std::uint64_t checked_size(int fd, const std::string& path, std::uint64_t max_bytes, const std::string& what) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw InputError(path + ": cannot read (" + std::strerror(errno) + ")");
  if (!S_ISREG(info.st_mode)) {
    throw InputError(path + ": not a regular file (a " + what + " is read only from a regular file)");
  }
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > max_bytes) throw InputError(over_cap(path, max_bytes, what));
  return size;
}

}  // namespace

std::uint64_t input_file_size(const std::string& path, std::uint64_t max_bytes, const std::string& what) {
  const OpenFile file(path);
  return checked_size(file.fd(), path, max_bytes, what);
}

std::string read_input_file(const std::string& path, std::uint64_t max_bytes, const std::string& what) {
  const OpenFile file(path);
  const std::uint64_t size = checked_size(file.fd(), path, max_bytes, what);
  std::string text;
  text.reserve(size);
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(file.fd(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw InputError(path + ": cannot read (" + std::strerror(errno) + ")");
    if (got == 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
    if (text.size() > max_bytes) throw InputError(over_cap(path, max_bytes, what));  // it grew
  }
  return text;
}

}  // namespace oomlab::report
