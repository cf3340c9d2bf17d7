// LLaMA-shaped checkpoints: the tensor layout of a preset (Hugging Face names and shapes) and a
// generator that writes it as safetensors with seeded random values.
//
// Values are counter-based (a hash of seed, tensor index and element index), so any chunk of
// any tensor can be produced on its own, in any order, at memory speed, and a bf16 (f16) file
// holds exactly the round-to-nearest-even of the f32 file with the same seed.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scenarios/models/safetensors/safetensors_format.hpp"

namespace oomlab::safetensors {

struct LlamaShape {
  std::string name;            // "llama-7b"
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;   // key/value heads: < heads is grouped-query attention (70B)
  std::int64_t ffn = 0;        // SiLU-gated MLP width
  std::int64_t vocab = 0;
  std::int64_t head_dim() const { return hidden / heads; }
  std::int64_t kv_dim() const { return kv_heads * head_dim(); }  // rows of k_proj and v_proj
  std::int64_t parameters() const;
};

// Meta's Llama-2 shapes as Hugging Face's LlamaForCausalLM checkpoints hold them (config.json of
// meta-llama/Llama-2-{7b,13b,70b}-hf):
//   llama-7b   4096 hidden, 32 layers, 32 heads,            FFN 11008, vocab 32000:  6,738,415,616
//   llama-13b  5120 hidden, 40 layers, 40 heads,            FFN 13824, vocab 32000: 13,015,864,320
//   llama-70b  8192 hidden, 80 layers, 64 heads, 8 kv heads, FFN 28672, vocab 32000: 68,976,648,192
// (7B's and 70B's counts match those repositories' index total_size: 2 bytes per parameter plus
// the f32 rotary tables, 64 floats per layer), then llama-small (a GPU check in seconds) and
// llama-tiny (host tests). In order of size.
const std::vector<LlamaShape>& llama_presets();
std::vector<std::string> llama_preset_names();
// Throws std::invalid_argument naming the preset and listing the known ones.
const LlamaShape& llama_preset(const std::string& name);

// Tensors in file order (embedding, the layers, final norm, lm_head) with offsets assigned.
// Matrices are (out_features, in_features) as nn.Linear stores them; norms are (hidden);
// k_proj and v_proj are (kv_dim, hidden).
std::vector<TensorEntry> llama_layout(const LlamaShape& shape, DType dtype);

// Whether `entry` is a layer's rotary table, model.layers.N.self_attn.rotary_emb.inv_freq of
// (head_dim / 2) floats, N < layers. Older transformers releases saved these buffers in
// checkpoints (every meta-llama/Llama-2-*-hf holds them, in f32 beside f16 weights); loaders
// recompute them and skip the saved ones, as transformers and vLLM do.
bool is_llama_rotary_table(const TensorEntry& entry, const LlamaShape& shape);

// The f32 value of element `index` of tensor number `tensor_index` (its position in the
// layout). Matrices are uniform in +-0.05 (never exactly zero), norm weights 1 +- 0.1.
float llama_value(std::uint64_t seed, std::uint64_t tensor_index, bool is_norm, std::uint64_t index);
// Fills `count` elements starting at `first` of a tensor as f32, bf16 or f16 (raw bits).
void fill_llama_values(std::uint64_t seed, std::uint64_t tensor_index, bool is_norm, DType dtype,
                       std::uint64_t first, std::uint64_t count, void* dst);
bool is_norm_weight(const TensorEntry& entry);  // 1-D tensors: the RMSNorm weights

// The __metadata__ generate_llama_checkpoint writes: format, preset, dtype and seed.
std::map<std::string, std::string> llama_metadata(const LlamaShape& shape, DType dtype, std::uint64_t seed);

// Writes the preset's checkpoint in f32, bf16 or f16 (atomically; throws SafetensorsError).
// __metadata__ records the preset, dtype and seed so a cached file can be recognised.
void generate_llama_checkpoint(const std::string& path, const LlamaShape& shape, DType dtype,
                               std::uint64_t seed);

}  // namespace oomlab::safetensors
