#include "scenarios/models/safetensors/llama_checkpoint.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>
#include <vector>

#include "harness/parallel/thread_team.hpp"
#include "scenarios/models/safetensors/safetensors_writer.hpp"

namespace oomlab::safetensors {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// One 64-bit hash gives two elements: (index / 2) is the counter, the half picks 32 bits.
std::uint64_t stream_key(std::uint64_t seed, std::uint64_t tensor_index) {
  return splitmix64(seed ^ splitmix64(tensor_index + 0x5851f42d4c957f2dull));
}

float value_from_bits(std::uint32_t bits, bool is_norm) {
  // (signed 32-bit + 0.5) is never zero, so no element is exactly 0.
  const float unit = (static_cast<float>(static_cast<std::int32_t>(bits)) + 0.5f) * (1.0f / 2147483648.0f);
  return is_norm ? 1.0f + 0.1f * unit : 0.05f * unit;
}

// fill_llama_values on every core: values are counter-based, so the pieces are independent and
// the bytes do not depend on the thread count. (One thread made the 13.5 GB bf16 7B file in
// 105 s on the 16-core GPU machine; rounding to bf16 costs ~17 ns per element.)
void fill_on_all_cores(std::uint64_t seed, std::uint64_t tensor_index, bool is_norm, DType dtype,
                       std::uint64_t first, std::uint64_t count, std::uint8_t* dst) {
  constexpr std::uint64_t kMinElementsPerThread = 64 * 1024;  // below this a thread costs more
  const std::uint64_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const std::uint64_t threads = std::clamp<std::uint64_t>(count / kMinElementsPerThread, 1, hardware);
  const std::uint64_t piece = (count + threads - 1) / threads;
  const std::size_t element = dtype_size(dtype);
  ThreadTeam(threads).run([&](std::size_t t) {
    const std::uint64_t begin = std::min<std::uint64_t>(count, t * piece);
    const std::uint64_t n = std::min(piece, count - begin);
    if (n > 0) fill_llama_values(seed, tensor_index, is_norm, dtype, first + begin, n, dst + begin * element);
  });
}

}  // namespace

std::int64_t LlamaShape::parameters() const {
  // q_proj, o_proj (hidden, hidden); k_proj, v_proj (kv_dim, hidden); the SiLU-gated MLP; 2 norms.
  const std::int64_t per_layer = 2 * hidden * hidden + 2 * kv_dim() * hidden + 3 * hidden * ffn + 2 * hidden;
  return 2 * vocab * hidden + layers * per_layer + hidden;
}

const std::vector<LlamaShape>& llama_presets() {
  //                                  hidden layers heads kv_heads    ffn  vocab
  static const std::vector<LlamaShape> presets = {
      {"llama-tiny", 256, 2, 4, 4, 688, 2048},
      {"llama-small", 1024, 4, 16, 16, 2816, 32000},
      {"llama-7b", 4096, 32, 32, 32, 11008, 32000},
      {"llama-13b", 5120, 40, 40, 40, 13824, 32000},
      {"llama-70b", 8192, 80, 64, 8, 28672, 32000},
  };
  return presets;
}

std::vector<std::string> llama_preset_names() {
  std::vector<std::string> names;
  for (const LlamaShape& preset : llama_presets()) names.push_back(preset.name);
  return names;
}

const LlamaShape& llama_preset(const std::string& name) {
  std::string known;
  for (const LlamaShape& preset : llama_presets()) {
    if (preset.name == name) return preset;
    known += (known.empty() ? "" : ", ") + preset.name;
  }
  throw std::invalid_argument("unknown LLaMA preset '" + name + "' (known: " + known + ")");
}

std::vector<TensorEntry> llama_layout(const LlamaShape& s, DType dtype) {
  std::vector<TensorEntry> tensors;
  auto add = [&](std::string name, Shape shape) {
    tensors.push_back(TensorEntry{std::move(name), dtype, std::move(shape), 0, 0});
  };
  add("model.embed_tokens.weight", {s.vocab, s.hidden});
  for (std::int64_t layer = 0; layer < s.layers; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    add(p + "input_layernorm.weight", {s.hidden});
    add(p + "self_attn.q_proj.weight", {s.hidden, s.hidden});
    add(p + "self_attn.k_proj.weight", {s.kv_dim(), s.hidden});
    add(p + "self_attn.v_proj.weight", {s.kv_dim(), s.hidden});
    add(p + "self_attn.o_proj.weight", {s.hidden, s.hidden});
    add(p + "post_attention_layernorm.weight", {s.hidden});
    add(p + "mlp.gate_proj.weight", {s.ffn, s.hidden});
    add(p + "mlp.up_proj.weight", {s.ffn, s.hidden});
    add(p + "mlp.down_proj.weight", {s.hidden, s.ffn});
  }
  add("model.norm.weight", {s.hidden});
  add("lm_head.weight", {s.vocab, s.hidden});
  return assign_offsets(std::move(tensors));
}

bool is_norm_weight(const TensorEntry& entry) { return entry.shape.size() == 1; }

bool is_llama_rotary_table(const TensorEntry& entry, const LlamaShape& shape) {
  static const std::string prefix = "model.layers.", suffix = ".self_attn.rotary_emb.inv_freq";
  const std::string& name = entry.name;
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  const std::string layer = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  // A decimal layer number without leading zeros, below the layer count (at most 19 digits).
  if (layer.size() > 18 || layer.find_first_not_of("0123456789") != std::string::npos ||
      (layer.size() > 1 && layer[0] == '0') || std::stoll(layer) >= shape.layers) {
    return false;
  }
  return is_floating(entry.dtype) && entry.shape == Shape{shape.head_dim() / 2};
}

float llama_value(std::uint64_t seed, std::uint64_t tensor_index, bool is_norm, std::uint64_t index) {
  const std::uint64_t bits = splitmix64(stream_key(seed, tensor_index) + index / 2);
  return value_from_bits(static_cast<std::uint32_t>(index % 2 ? bits >> 32 : bits), is_norm);
}

void fill_llama_values(std::uint64_t seed, std::uint64_t tensor_index, bool is_norm, DType dtype,
                       std::uint64_t first, std::uint64_t count, void* dst) {
  if (!is_floating(dtype)) {
    throw std::invalid_argument(std::string("fill_llama_values: f32, bf16 or f16, not ") + dtype_name(dtype));
  }
  const std::uint64_t key = stream_key(seed, tensor_index);
  auto* f32 = static_cast<float*>(dst);
  auto* half = static_cast<std::uint16_t*>(dst);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t index = first + i;
    const std::uint64_t bits = splitmix64(key + index / 2);
    const float value = value_from_bits(static_cast<std::uint32_t>(index % 2 ? bits >> 32 : bits), is_norm);
    if (dtype == DType::f32) {
      f32[i] = value;
    } else {
      half[i] = dtype == DType::bf16 ? float_to_bf16_bits(value) : float_to_f16_bits(value);
    }
  }
}

std::map<std::string, std::string> llama_metadata(const LlamaShape& shape, DType dtype, std::uint64_t seed) {
  return {
      {"format", "pt"},
      {"oomlab_preset", shape.name},
      {"oomlab_dtype", dtype_name(dtype)},
      {"oomlab_seed", std::to_string(seed)},
  };
}

void generate_llama_checkpoint(const std::string& path, const LlamaShape& shape, DType dtype,
                               std::uint64_t seed) {
  if (!is_floating(dtype)) {  // checked here, not inside the fill threads
    throw std::invalid_argument(std::string("generate_llama_checkpoint: f32, bf16 or f16, not ") + dtype_name(dtype));
  }
  const std::vector<TensorEntry> layout = llama_layout(shape, dtype);
  // The writer hands back entries in layout order; their index is the value stream's key.
  std::map<std::string, std::uint64_t> index_of;
  for (std::size_t i = 0; i < layout.size(); ++i) index_of[layout[i].name] = i;
  // 64 MiB write chunks: each is filled by every core, then written.
  constexpr std::size_t kGenerateChunk = 64 * MiB;
  write_safetensors(path, layout, llama_metadata(shape, dtype, seed),
                    [&](const TensorEntry& entry, std::uint64_t offset, std::uint8_t* dst, std::size_t bytes) {
                      const std::size_t element = dtype_size(entry.dtype);
                      fill_on_all_cores(seed, index_of.at(entry.name), is_norm_weight(entry),
                                        entry.dtype, offset / element, bytes / element, dst);
                    },
                    kGenerateChunk);
}

}  // namespace oomlab::safetensors
