#include "scenarios/models/safetensors/safetensors_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>

namespace oomlab::safetensors {
namespace {

[[noreturn]] void fail_errno(const std::string& path, const std::string& what) {
  throw SafetensorsError(path + ": " + what + ": " + std::strerror(errno));
}

void write_all(int fd, const std::uint8_t* data, std::size_t bytes, const std::string& path) {
  while (bytes > 0) {
    const ssize_t wrote = ::write(fd, data, bytes);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) fail_errno(path, "write failed");
    data += wrote;
    bytes -= static_cast<std::size_t>(wrote);
  }
}

std::string temp_path_for(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorEntry>& input,
                       const std::map<std::string, std::string>& metadata, const FillFn& fill,
                       std::size_t chunk_bytes) {
  if (chunk_bytes == 0 || chunk_bytes % 8 != 0) {
    throw SafetensorsError(path + ": write chunk must be a positive multiple of 8 bytes");
  }
  const std::vector<TensorEntry> tensors = assign_offsets(input);
  const std::string json_text = serialize_header(tensors, metadata);
  const std::string temp = temp_path_for(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno(path, "cannot create temp file " + temp);
  bool open = true;
  try {
    std::uint8_t prefix[kLengthPrefixBytes];
    std::uint64_t length = json_text.size();
    for (std::size_t i = 0; i < kLengthPrefixBytes; ++i) prefix[i] = (length >> (8 * i)) & 0xff;
    write_all(fd, prefix, sizeof prefix, path);
    write_all(fd, reinterpret_cast<const std::uint8_t*>(json_text.data()), json_text.size(), path);
    std::vector<std::uint8_t> chunk(chunk_bytes);
    for (const TensorEntry& entry : tensors) {
      for (std::uint64_t offset = 0; offset < entry.bytes(); offset += chunk_bytes) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_bytes, entry.bytes() - offset));
        fill(entry, offset, chunk.data(), n);
        write_all(fd, chunk.data(), n, path);
      }
    }
    if (::fsync(fd) != 0) fail_errno(path, "fsync failed");
    open = false;
    if (::close(fd) != 0) fail_errno(path, "close failed");
  } catch (...) {
    if (open) ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    fail_errno(path, "rename from " + temp + " failed");
  }
}

void write_safetensors(const std::string& path, const std::vector<HostTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<TensorEntry> entries;
  std::map<std::string, const HostTensor*> by_name;
  for (const HostTensor& tensor : tensors) {
    const std::uint64_t needed = static_cast<std::uint64_t>(shape_numel(tensor.shape)) * dtype_size(tensor.dtype);
    if (tensor.bytes.size() != needed) {
      throw SafetensorsError(path + ": tensor '" + tensor.name + "': " +
                             std::to_string(tensor.bytes.size()) + " bytes given, " +
                             dtype_name(tensor.dtype) + " " + shape_string(tensor.shape) +
                             " needs " + std::to_string(needed));
    }
    if (!by_name.emplace(tensor.name, &tensor).second) {
      throw SafetensorsError(path + ": tensor '" + tensor.name + "' given twice");
    }
    entries.push_back(TensorEntry{tensor.name, tensor.dtype, tensor.shape, 0, 0});
  }
  write_safetensors(path, entries, metadata,
                    [&](const TensorEntry& entry, std::uint64_t offset, std::uint8_t* dst, std::size_t n) {
                      std::memcpy(dst, by_name.at(entry.name)->bytes.data() + offset, n);
                    });
}

}  // namespace oomlab::safetensors
