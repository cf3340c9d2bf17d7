#include "scenarios/models/transformer/transformer_config.hpp"

#include <stdexcept>

#include "harness/memory/size.hpp"

namespace oomlab::model {
namespace {

TransformerConfig make(const char* name, ModelStyle style, std::int64_t vocab, std::int64_t max_seq,
                       std::int64_t layers, std::int64_t heads, std::int64_t channels,
                       std::int64_t ffn) {
  TransformerConfig config;
  config.name = name;
  config.style = style;
  config.vocab = vocab;
  config.max_seq = max_seq;
  config.layers = layers;
  config.heads = heads;
  config.channels = channels;
  config.ffn = ffn;
  config.kv_heads = heads;
  config.head_size = channels / heads;
  config.tied_embeddings = config.qkv_bias = style == ModelStyle::gpt2;
  config.architecture = style == ModelStyle::gpt2 ? "GPT2LMHeadModel" : "LlamaForCausalLM";
  config.torch_dtype = "float32";
  return config;
}

// A Llama-family model (Llama, Mistral, Qwen2) as its config.json on the Hub reads.
TransformerConfig make_hub(const char* name, const char* architecture, std::int64_t vocab, std::int64_t max_seq,
                           std::int64_t layers, std::int64_t heads, std::int64_t kv_heads, std::int64_t channels,
                           std::int64_t ffn, double rope_theta, const char* torch_dtype) {
  TransformerConfig config = make(name, ModelStyle::llama, vocab, max_seq, layers, heads, channels, ffn);
  config.kv_heads = kv_heads;
  config.architecture = architecture;
  config.rope_theta = rope_theta;
  config.torch_dtype = torch_dtype;
  return config;
}

TransformerConfig with_sliding_window(TransformerConfig config, std::int64_t window) {
  config.sliding_window = window;
  return config;
}

TransformerConfig with_qkv_bias(TransformerConfig config) {
  config.qkv_bias = true;
  return config;
}

const std::vector<TransformerConfig>& presets() {
  static const std::vector<TransformerConfig> all = {
      // GPT-2's released sizes (Radford et al. 2019): config.json of openai-community/gpt2,
      // gpt2-medium, gpt2-large, gpt2-xl (n_embd, n_layer, n_head, n_positions; n_inner null = 4C).
      make("gpt2-124m", ModelStyle::gpt2, 50257, 1024, 12, 12, 768, 3072),
      make("gpt2-350m", ModelStyle::gpt2, 50257, 1024, 24, 16, 1024, 4096),
      make("gpt2-774m", ModelStyle::gpt2, 50257, 1024, 36, 20, 1280, 5120),
      make("gpt2-1.5b", ModelStyle::gpt2, 50257, 1024, 48, 25, 1600, 6400),
      make("gpt2-small", ModelStyle::gpt2, 8192, 256, 4, 4, 256, 1024),
      make("gpt2-tiny", ModelStyle::gpt2, 64, 32, 2, 2, 128, 256),
      // LLaMA's 7B and 13B (Touvron et al. 2023), the names the first stories used: the same
      // shapes as llama-2-7b and llama-2-13b below.
      make("llama-7b", ModelStyle::llama, 32000, 4096, 32, 32, 4096, 11008),
      make("llama-13b", ModelStyle::llama, 32000, 4096, 40, 40, 5120, 13824),
      make("llama-small", ModelStyle::llama, 8192, 256, 4, 4, 256, 688),
      make("llama-tiny", ModelStyle::llama, 64, 32, 2, 2, 128, 192),
      // The Hub's configs (config.json of each repository; tests/configs holds their fields):
      // meta-llama/Llama-2-7b-hf, meta-llama/Llama-2-13b-hf
      make_hub("llama-2-7b", "LlamaForCausalLM", 32000, 4096, 32, 32, 32, 4096, 11008, 10000.0, "float16"),
      make_hub("llama-2-13b", "LlamaForCausalLM", 32000, 4096, 40, 40, 40, 5120, 13824, 10000.0, "float16"),
      // meta-llama/Meta-Llama-3-8B, meta-llama/Llama-3.1-70B (its rope_scaling changes values only)
      make_hub("llama-3-8b", "LlamaForCausalLM", 128256, 8192, 32, 32, 8, 4096, 14336, 500000.0, "bfloat16"),
      make_hub("llama-3.1-70b", "LlamaForCausalLM", 128256, 131072, 80, 64, 8, 8192, 28672, 500000.0, "bfloat16"),
      // mistralai/Mistral-7B-v0.1
      with_sliding_window(make_hub("mistral-7b", "MistralForCausalLM", 32000, 32768, 32, 32, 8, 4096, 14336,
                                   10000.0, "bfloat16"),
                          4096),
      // Qwen/Qwen2.5-7B, Qwen/Qwen2.5-14B: biased q/k/v; sliding_window set but use_sliding_window false
      with_qkv_bias(make_hub("qwen2.5-7b", "Qwen2ForCausalLM", 152064, 131072, 28, 28, 4, 3584, 18944, 1000000.0,
                             "bfloat16")),
      with_qkv_bias(make_hub("qwen2.5-14b", "Qwen2ForCausalLM", 152064, 131072, 48, 40, 8, 5120, 13824, 1000000.0,
                             "bfloat16")),
  };
  return all;
}

// The Hub's names for GPT-2's sizes.
struct Alias {
  const char* name;
  const char* preset;
};
constexpr Alias kAliases[] = {
    {"gpt2", "gpt2-124m"}, {"gpt2-medium", "gpt2-350m"}, {"gpt2-large", "gpt2-774m"}, {"gpt2-xl", "gpt2-1.5b"}};

}  // namespace

std::size_t TransformerConfig::parameter_count() const {
  const auto n = [](std::int64_t v) { return SaturatingSize(static_cast<std::size_t>(v)); };
  const SaturatingSize C = n(channels), F = n(ffn), V = n(vocab), L = n(layers);
  const bool gpt2 = is_gpt2();
  const SaturatingSize norm = gpt2 ? C * 2 : C;  // weight (and bias)
  SaturatingSize attention = n(qkv_width()) * C + C * n(q_width());
  if (qkv_bias) attention += n(qkv_width());
  if (gpt2) attention += C;  // the output projection's bias
  const SaturatingSize mlp = gpt2 ? F * C * 2 + F + C : F * C * 3;
  SaturatingSize total = V * C + L * (norm * 2 + attention + mlp) + norm;
  if (gpt2) total += n(max_seq) * C;  // learned positions
  if (!tied_embeddings) total += V * C;  // the LM head
  return total.value;
}

std::string transformer_preset_alias_of(std::string_view name) {
  for (const Alias& alias : kAliases) {
    if (name == alias.name) return alias.preset;
  }
  return {};
}

TransformerConfig transformer_preset(std::string_view name) {
  const std::string preset = transformer_preset_alias_of(name);
  for (const TransformerConfig& config : presets()) {
    if (config.name == name) return config;
    if (config.name == preset) {
      TransformerConfig renamed = config;
      renamed.name = std::string(name);  // what the user named, in notes and records
      return renamed;
    }
  }
  std::string known;
  for (const std::string& each : transformer_preset_names()) known += (known.empty() ? "" : ", ") + each;
  throw std::invalid_argument("unknown transformer preset '" + std::string(name) + "' (known: " +
                              known + ")");
}

std::vector<std::string> transformer_preset_names() {
  std::vector<std::string> names;
  for (const TransformerConfig& config : presets()) names.push_back(config.name);
  for (const Alias& alias : kAliases) names.emplace_back(alias.name);
  return names;
}

TransformerConfig with_max_seq(TransformerConfig config, std::int64_t max_seq) {
  config.max_seq = max_seq;
  config.name += "-T" + std::to_string(max_seq);
  return config;
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::f32: return "f32";
    case Precision::bf16: return "bf16";
    case Precision::f16: return "f16";
  }
  return "?";
}

DType compute_dtype(Precision precision) {
  switch (precision) {
    case Precision::f32: return DType::f32;
    case Precision::bf16: return DType::bf16;
    case Precision::f16: return DType::f16;
  }
  return DType::f32;
}

const char* attention_name(AttentionKind kind) {
  return kind == AttentionKind::naive ? "naive" : "fused";
}

const char* lora_targets_name(LoraTargets targets) {
  switch (targets) {
    case LoraTargets::all: return "all";
    case LoraTargets::attention: return "attention";
    case LoraTargets::mlp: return "mlp";
  }
  return "?";
}

DType attention_dtype(AttentionKind kind) {
  return kind == AttentionKind::naive ? DType::f32 : DType::bf16;
}

}  // namespace oomlab::model
