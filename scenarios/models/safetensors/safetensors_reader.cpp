#include "scenarios/models/safetensors/safetensors_reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace oomlab::safetensors {
namespace {

[[noreturn]] void fail_errno(const std::string& path, const char* what) {
  throw SafetensorsError(path + ": " + what + ": " + std::strerror(errno));
}

int open_readonly(const std::string& path, std::uint64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno(path, "cannot open");
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    ::close(fd);
    fail_errno(path, "cannot stat");
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw SafetensorsError(path + ": not a regular file");
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
  fd_ = open_readonly(path, file_bytes_);
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
  if (!entry) throw SafetensorsError(path_ + ": no tensor '" + std::string(name) + "'");
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
  const int fd = open_readonly(path, size);
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

}  // namespace oomlab::safetensors
