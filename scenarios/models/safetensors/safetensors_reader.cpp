#include "scenarios/models/safetensors/safetensors_reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "harness/memory/user_text.hpp"

namespace oomlab::safetensors {
namespace {

[[noreturn]] void fail_errno(const std::string& path, const char* what) {
  throw SafetensorsError(path + ": " + what + ": " + std::strerror(errno));
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

[[noreturn]] void fail_not_regular(const std::string& path, mode_t mode) {
  throw SafetensorsError(path + ": " + file_kind(mode) + ", not a regular file");
}

// Opens `path` only if it is a regular file: open() on a FIFO blocks until a writer comes, and
// opening a device node can act on the device. stat() refuses those before any open; O_NONBLOCK
// and fstat() refuse a path swapped for one in between (for a regular file O_NONBLOCK changes
// nothing).
int open_regular_file(const std::string& path, std::uint64_t& size) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) fail_errno(path, "cannot open");
  if (!S_ISREG(info.st_mode)) fail_not_regular(path, info.st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail_errno(path, "cannot open");
  if (::fstat(fd, &info) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    fail_errno(path, "cannot stat");
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    fail_not_regular(path, info.st_mode);
  }
  size = static_cast<std::uint64_t>(info.st_size);
  return fd;
}

void read_exactly(int fd, void* dst, std::size_t bytes, std::uint64_t offset, const std::string& path) {
  auto* out = static_cast<char*>(dst);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd, out, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail_errno(path, "read failed");
    if (got == 0) throw SafetensorsError(path + ": truncated while reading the header");
    out += got;
    bytes -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  fd_ = open_regular_file(path, file_bytes_);
  try {
    if (file_bytes_ < kLengthPrefixBytes) {
      std::uint8_t none[kLengthPrefixBytes] = {};
      header_length_from_prefix(none, file_bytes_, path);  // throws "truncated"
    }
    void* mapped = ::mmap(nullptr, file_bytes_, PROT_READ, MAP_SHARED, fd_, 0);
    if (mapped == MAP_FAILED) fail_errno(path, "mmap failed");
    mapping_ = static_cast<std::uint8_t*>(mapped);
    header_ = parse_file_image(mapping_, file_bytes_, path);
  } catch (...) {
    if (mapping_) ::munmap(mapping_, file_bytes_);
    ::close(fd_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_) ::munmap(mapping_, file_bytes_);
  if (fd_ >= 0) ::close(fd_);
}

TensorView SafetensorsFile::tensor(std::string_view name) const {
  const TensorEntry* entry = header_.find(name);
  if (!entry) throw SafetensorsError(path_ + ": no tensor " + quote_user_text(name));
  return tensor(*entry);
}

TensorView SafetensorsFile::tensor(const TensorEntry& entry) const {
  return TensorView{&entry, mapping_ + header_.data_start() + entry.begin, entry.bytes()};
}

void SafetensorsFile::drop_page_cache() const {
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
}

Header read_header(const std::string& path) {
  std::uint64_t size = 0;
  const int fd = open_regular_file(path, size);
  std::uint64_t length = 0;
  std::string text;
  try {
    std::uint8_t prefix[kLengthPrefixBytes] = {};
    if (size >= kLengthPrefixBytes) read_exactly(fd, prefix, sizeof prefix, 0, path);
    length = header_length_from_prefix(prefix, size, path);
    text.resize(static_cast<std::size_t>(length));
    read_exactly(fd, text.data(), text.size(), kLengthPrefixBytes, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return parse_header(text, size - kLengthPrefixBytes - length, path);
}

std::string read_small_file(const std::string& path, std::uint64_t max_bytes) {
  std::uint64_t size = 0;
  const int fd = open_regular_file(path, size);
  std::string text;
  try {
    if (size > max_bytes) {
      throw SafetensorsError(path + ": " + std::to_string(size) + " bytes, more than the " +
                             std::to_string(max_bytes) + " it may have");
    }
    text.resize(static_cast<std::size_t>(size));
    read_exactly(fd, text.data(), text.size(), 0, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return text;
}

}  // namespace oomlab::safetensors
