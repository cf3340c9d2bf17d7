// libFuzzer target: any byte string given as a whole safetensors file must either parse into a
// consistent header or throw SafetensorsError — never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "scenarios/models/safetensors/safetensors_format.hpp"

using namespace oomlab::safetensors;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const Header header = parse_file_image(data, size, "fuzz-input");
    // Whatever parsed must describe bytes inside the input, back to back.
    std::uint64_t covered = 0;
    for (const TensorEntry& entry : header.tensors) {
      if (entry.begin != covered || entry.end > header.data_bytes) std::abort();
      covered = entry.end;
    }
    if (covered != header.data_bytes || header.data_start() + header.data_bytes != size) std::abort();
  } catch (const SafetensorsError&) {
    // The expected answer to a malformed file.
  }
  return 0;
}
