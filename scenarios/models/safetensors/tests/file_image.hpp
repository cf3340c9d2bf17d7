// Writes a safetensors file image by hand (the writer only makes valid files): the 8-byte
// little-endian length of `json`, `json`, then `data_bytes` zero bytes.
#pragma once
#include <cstddef>
#include <fstream>
#include <stdexcept>
#include <string>

namespace oomlab::safetensors::testing {

inline void write_file_image(const std::string& path, const std::string& json, std::size_t data_bytes = 0) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(json.size() >> (8 * i));
  std::ofstream out(path, std::ios::binary);
  out << bytes << json << std::string(data_bytes, '\0');
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace oomlab::safetensors::testing
