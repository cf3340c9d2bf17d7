// libFuzzer target: any byte string must either parse into a consistent header or throw
// SafetensorsError — never crash, hang or read out of bounds. Each input is read two ways:
//
//   as a whole file image: [8-byte length N][N bytes of JSON][data section], as on disk;
//   as a sparse image: [8-byte length N][N bytes of JSON][8-byte data-section size], the data
//     declared, not present. This is how a real 7B header (27 GB of data behind it) can be a
//     seed and reach the layout checks with its real offsets.
//
// Both use little-endian lengths, so a file image seed is also a (mostly malformed) sparse one
// and the reverse; see README.md beside this file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "scenarios/models/safetensors/safetensors_format.hpp"

using namespace oomlab::safetensors;

namespace {

// Whatever parsed must describe the data section back to back, inside its declared size.
void check_tiling(const Header& header) {
  std::uint64_t covered = 0;
  for (const TensorEntry& entry : header.tensors) {
    if (entry.begin != covered || entry.end > header.data_bytes) std::abort();
    covered = entry.end;
  }
  if (covered != header.data_bytes) std::abort();
}

void parse_as_file_image(const std::uint8_t* data, std::size_t size) {
  try {
    const Header header = parse_file_image(data, size, "fuzz-input");
    check_tiling(header);
    if (header.data_start() + header.data_bytes != size) std::abort();
  } catch (const SafetensorsError&) {
    // The expected answer to a malformed file.
  }
}

void parse_as_sparse_image(const std::uint8_t* data, std::size_t size) {
  if (size < 2 * kLengthPrefixBytes) return;
  const std::uint64_t length = read_u64_le(data);
  if (length != size - 2 * kLengthPrefixBytes) return;
  const std::string_view json(reinterpret_cast<const char*>(data) + kLengthPrefixBytes, length);
  try {
    check_tiling(parse_header(json, read_u64_le(data + kLengthPrefixBytes + length), "fuzz-input"));
  } catch (const SafetensorsError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  parse_as_file_image(data, size);
  parse_as_sparse_image(data, size);
  return 0;
}
