// LLaMA-shaped checkpoints: the tensor layout of a preset (Hugging Face names and shapes) and a
// generator that writes it as safetensors with seeded random values.
//
// Values are counter-based (a hash of seed, tensor index and element index), so any chunk of
// any tensor can be produced on its own, in any order, at memory speed, and a bf16 file holds
// exactly the round-to-nearest-even of the f32 file with the same seed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/models/safetensors/safetensors_format.hpp"

namespace oomlab::safetensors {

struct LlamaShape {
  std::string name;            // "llama-7b"
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t ffn = 0;        // SiLU-gated MLP width
  std::int64_t vocab = 0;
  std::int64_t parameters() const;
};

// llama-7b (4096, 32 layers, 32 heads, FFN 11008, vocab 32000: 6,738,415,616 parameters),
// llama-small (a GPU check in seconds) and llama-tiny (host tests).
const std::vector<LlamaShape>& llama_presets();
// Throws std::invalid_argument naming the preset and listing the known ones.
const LlamaShape& llama_preset(const std::string& name);

// Tensors in file order (embedding, the layers, final norm, lm_head) with offsets assigned.
// Matrices are (out_features, in_features) as nn.Linear stores them; norms are (hidden).
std::vector<TensorEntry> llama_layout(const LlamaShape& shape, DType dtype);

// The f32 value of element `index` of tensor number `tensor_index` (its position in the
// layout). Matrices are uniform in +-0.05 (never exactly zero), norm weights 1 +- 0.1.
float llama_value(std::uint64_t seed, std::uint64_t tensor_index, bool is_norm, std::uint64_t index);
// Fills `count` elements starting at `first` of a tensor as f32 or bf16 (raw bits).
void fill_llama_values(std::uint64_t seed, std::uint64_t tensor_index, bool is_norm, DType dtype,
                       std::uint64_t first, std::uint64_t count, void* dst);
bool is_norm_weight(const TensorEntry& entry);  // 1-D tensors: the RMSNorm weights

// Writes the preset's checkpoint in f32 or bf16 (atomically; throws SafetensorsError).
// __metadata__ records the preset, dtype and seed so a cached file can be recognised.
void generate_llama_checkpoint(const std::string& path, const LlamaShape& shape, DType dtype,
                               std::uint64_t seed);

}  // namespace oomlab::safetensors
