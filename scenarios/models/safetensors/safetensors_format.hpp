// The safetensors format (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, optional
// "__metadata__": {string: string}}, then the data section. Offsets are relative to the data
// section's start and must tile it exactly (no overlap, no hole), as the reference reader demands.
//
// Every error is a SafetensorsError whose message names the file and, where there is one, the
// tensor ("llama.safetensors: tensor 'lm_head.weight': data_offsets [0, 12) hold 12 bytes but
// f32 (2, 3) needs 24"), so a bad checkpoint never reaches a kernel. The message is one short
// line whatever the file holds: names and values from it are quoted capped and escaped.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/dtype.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::safetensors {

class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The reference implementation's cap on the JSON header (100 MB): a larger length is a corrupt
// or hostile file, never a real checkpoint.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
constexpr std::size_t kLengthPrefixBytes = 8;

// One tensor of the header: where its bytes lie inside the data section.
struct TensorEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::uint64_t begin = 0;  // byte offsets relative to the data section, [begin, end)
  std::uint64_t end = 0;
  std::uint64_t bytes() const { return end - begin; }
  std::int64_t numel() const { return shape_numel(shape); }
};

struct Header {
  std::vector<TensorEntry> tensors;  // in data-offset order
  std::map<std::string, std::string> metadata;
  std::uint64_t json_bytes = 0;      // N, the length prefix
  std::uint64_t data_bytes = 0;      // size of the data section
  std::uint64_t data_start() const { return kLengthPrefixBytes + json_bytes; }
  const TensorEntry* find(std::string_view name) const;
};

// safetensors dtype names ("F32", "BF16", ...) for the dtypes oomlab has.
const char* safetensors_dtype_name(DType dtype);

// shape_string(shape) for an error message: a shape read from a file can have any number of
// dimensions, so past 8 the rest are counted, not listed: "(1, 1, 1, 1, 1, 1, 1, 1, ... 50001 dims)".
std::string shape_for_message(const Shape& shape);

// Parses the JSON header text for a data section of `data_bytes`; `file` names the source in
// errors. Throws SafetensorsError on anything malformed.
Header parse_header(std::string_view json, std::uint64_t data_bytes, const std::string& file);

// Parses a whole file image held in memory (prefix, header, data). Used by the fuzzer and by
// tests; the mmap reader performs the same checks.
Header parse_file_image(const std::uint8_t* bytes, std::size_t size, const std::string& file);

// The 8 bytes at `bytes` as a little-endian unsigned integer (the format's length prefix).
std::uint64_t read_u64_le(const std::uint8_t* bytes);

// Reads the 8-byte little-endian length prefix; throws when it cannot fit in `file_bytes`.
std::uint64_t header_length_from_prefix(const std::uint8_t* prefix, std::uint64_t file_bytes,
                                        const std::string& file);

// The tensors in order with data_offsets assigned back to back from 0 (input begin/end ignored).
std::vector<TensorEntry> assign_offsets(std::vector<TensorEntry> tensors);

// The JSON header for `tensors` (offsets as given), padded with spaces to a multiple of 8 bytes
// so the data section is aligned, as the reference writer does.
std::string serialize_header(const std::vector<TensorEntry>& tensors,
                             const std::map<std::string, std::string>& metadata);

}  // namespace oomlab::safetensors
