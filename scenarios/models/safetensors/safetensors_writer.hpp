// Writing safetensors files, streamed and atomic. A 7B f32 checkpoint is 27 GB, so the writer
// never holds a file in memory: it asks a fill function for each tensor's bytes one chunk at a
// time. harness/runner/atomic_file.hpp (the project's writer for records) takes the whole
// contents as one string, which does not fit a streamed write of this size; this writer uses the
// same protocol — temp file in the target's directory, fsync, rename — so a reader sees either
// the old file or the complete new one, never a partial checkpoint.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "harness/memory/size.hpp"
#include "scenarios/models/safetensors/safetensors_format.hpp"

namespace oomlab::safetensors {

// Writes bytes [offset, offset + bytes) of `entry`'s data into dst. Offsets are multiples of
// the chunk size, so every chunk starts on an element boundary.
using FillFn = std::function<void(const TensorEntry& entry, std::uint64_t offset,
                                  std::uint8_t* dst, std::size_t bytes)>;

constexpr std::size_t kDefaultWriteChunk = 16 * MiB;

// Writes `tensors` in the given order (data_offsets assigned back to back). Throws
// SafetensorsError naming `path` on any failure; the temp file is removed and an existing file
// at `path` is left as it was.
void write_safetensors(const std::string& path, const std::vector<TensorEntry>& tensors,
                       const std::map<std::string, std::string>& metadata, const FillFn& fill,
                       std::size_t chunk_bytes = kDefaultWriteChunk);

// A tensor held in memory, for small files (tests, examples).
struct HostTensor {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<std::uint8_t> bytes;  // numel * dtype_size(dtype)
};
void write_safetensors(const std::string& path, const std::vector<HostTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace oomlab::safetensors
