// Reading safetensors files. SafetensorsFile maps the whole file read-only and keeps it mapped:
// each tensor is a view into the mapping (no copy), so a loader can stream a 27 GB checkpoint
// tensor by tensor while the page cache, not the process heap, holds the bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "scenarios/models/safetensors/safetensors_format.hpp"

namespace oomlab::safetensors {

// A tensor's bytes inside the mapping.
struct TensorView {
  const TensorEntry* entry = nullptr;
  const std::uint8_t* data = nullptr;
  std::uint64_t bytes = 0;
};

class SafetensorsFile {
 public:
  // Maps `path` and validates its header. Throws SafetensorsError naming the file (and tensor).
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const Header& header() const { return header_; }
  std::uint64_t file_bytes() const { return file_bytes_; }
  // Throws SafetensorsError naming the file when there is no such tensor.
  TensorView tensor(std::string_view name) const;
  TensorView tensor(const TensorEntry& entry) const;
  // Tells the kernel to drop the file's cached pages (posix_fadvise DONTNEED) for cold-cache
  // measurements. Pages still mapped may stay resident; call before touching the data.
  void drop_page_cache() const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint8_t* mapping_ = nullptr;
  std::uint64_t file_bytes_ = 0;
  Header header_;
};

// The header alone, read with two small reads and no mapping: what a dry run plans from.
Header read_header(const std::string& path);

// A whole small file (a sharded checkpoint's index), opened as checkpoints are (a regular file
// only). Throws SafetensorsError naming `path` when it cannot be read or holds more than
// `max_bytes`.
std::string read_small_file(const std::string& path, std::uint64_t max_bytes);

}  // namespace oomlab::safetensors
