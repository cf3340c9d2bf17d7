// Writes the header fuzzer's seed corpus (see README.md beside this file) into the directory given:
// headers exactly as the repo's writer makes them, for every LLaMA preset and dtype, and small
// whole files with every dtype, a scalar, an empty tensor and metadata.
//
//   cmake --build <dir> --target safetensors_seed_corpus
//   <dir>/scenarios/models/safetensors/safetensors_seed_corpus scenarios/models/safetensors/fuzz/corpus
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/models/safetensors/safetensors_writer.hpp"

using namespace oomlab;
using namespace oomlab::safetensors;

namespace {

std::string little_endian_u64(std::uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
  return bytes;
}

// A sparse image (header_fuzz.cpp): the length, the header, the data section's size.
void write_sparse_image(const std::string& path, const std::vector<TensorEntry>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  const std::string json = serialize_header(tensors, metadata);
  std::uint64_t data_bytes = 0;
  for (const TensorEntry& entry : tensors) data_bytes = std::max(data_bytes, entry.end);
  std::ofstream(path, std::ios::binary) << little_endian_u64(json.size()) << json << little_endian_u64(data_bytes);
}

std::vector<std::uint8_t> counting_bytes(std::size_t n) {
  std::vector<std::uint8_t> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(i * 37 + 1);
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = std::string(argv[1]) + "/";
  for (const LlamaShape& preset : llama_presets()) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      write_sparse_image(dir + "sparse-" + preset.name + "-" + dtype_name(dtype) + ".bin",
                         llama_layout(preset, dtype), llama_metadata(preset, dtype, 7));
    }
  }
  // Hugging Face's writer lists tensors by name, not by offset: the parser must sort them.
  std::vector<TensorEntry> by_name = llama_layout(llama_preset("llama-tiny"), DType::bf16);
  std::sort(by_name.begin(), by_name.end(),
            [](const TensorEntry& a, const TensorEntry& b) { return a.name < b.name; });
  write_sparse_image(dir + "sparse-llama-tiny-bf16-name-order.bin", by_name, {{"format", "pt"}});

  write_safetensors(dir + "file-every-dtype.safetensors",
                    std::vector<HostTensor>{
                        {"embed", DType::f32, {2, 3}, counting_bytes(24)},
                        {"norm", DType::bf16, {4}, counting_bytes(8)},
                        {"half", DType::f16, {3}, counting_bytes(6)},
                        {"q", DType::i8, {2, 2}, counting_bytes(4)},
                        {"count", DType::i32, {1}, counting_bytes(4)},
                        {"step", DType::i64, {}, counting_bytes(8)},
                        {"empty", DType::f32, {0, 5}, {}},
                    },
                    {{"format", "pt"}, {"note", "every dtype, a scalar and an empty tensor"}});
  write_safetensors(dir + "file-no-tensors.safetensors", std::vector<HostTensor>{});
  write_safetensors(dir + "file-metadata-only.safetensors", std::vector<HostTensor>{}, {{"format", "pt"}});
  return 0;
}
