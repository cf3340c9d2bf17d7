#include "scenarios/models/transformer/transformer_config.hpp"

#include <stdexcept>

namespace oomlab::model {
namespace {

TransformerConfig make(const char* name, ModelStyle style, std::int64_t vocab, std::int64_t max_seq,
                       std::int64_t layers, std::int64_t heads, std::int64_t channels,
                       std::int64_t ffn) {
  return TransformerConfig{name, style, vocab, max_seq, layers, heads, channels, ffn};
}

const std::vector<TransformerConfig>& presets() {
  static const std::vector<TransformerConfig> all = {
      // GPT-2's released sizes (Radford et al. 2019; Hugging Face's gpt2, -medium, -large, -xl).
      make("gpt2-124m", ModelStyle::gpt2, 50257, 1024, 12, 12, 768, 3072),
      make("gpt2-350m", ModelStyle::gpt2, 50257, 1024, 24, 16, 1024, 4096),
      make("gpt2-774m", ModelStyle::gpt2, 50257, 1024, 36, 20, 1280, 5120),
      make("gpt2-1.5b", ModelStyle::gpt2, 50257, 1024, 48, 25, 1600, 6400),
      make("gpt2-small", ModelStyle::gpt2, 8192, 256, 4, 4, 256, 1024),
      make("gpt2-tiny", ModelStyle::gpt2, 64, 32, 2, 2, 128, 256),
      // LLaMA's 7B and 13B (Touvron et al. 2023): full multi-head attention, as modelled here
      // (the 70B's grouped-query attention is not).
      make("llama-7b", ModelStyle::llama, 32000, 4096, 32, 32, 4096, 11008),
      make("llama-13b", ModelStyle::llama, 32000, 4096, 40, 40, 5120, 13824),
      make("llama-small", ModelStyle::llama, 8192, 256, 4, 4, 256, 688),
      make("llama-tiny", ModelStyle::llama, 64, 32, 2, 2, 128, 192),
  };
  return all;
}

}  // namespace

std::size_t TransformerConfig::parameter_count() const {
  const auto C = static_cast<std::size_t>(channels), F = static_cast<std::size_t>(ffn);
  const auto V = static_cast<std::size_t>(vocab), L = static_cast<std::size_t>(layers);
  if (is_gpt2()) {
    const std::size_t block = 2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + F * C + F + C * F + C;
    return V * C + static_cast<std::size_t>(max_seq) * C + L * block + 2 * C;
  }
  const std::size_t block = C + 3 * C * C + C * C + C + 3 * F * C;
  return V * C + L * block + C + V * C;
}

TransformerConfig transformer_preset(std::string_view name) {
  for (const TransformerConfig& config : presets()) {
    if (config.name == name) return config;
  }
  std::string known;
  for (const TransformerConfig& config : presets()) known += (known.empty() ? "" : ", ") + config.name;
  throw std::invalid_argument("unknown transformer preset '" + std::string(name) + "' (known: " +
                              known + ")");
}

std::vector<std::string> transformer_preset_names() {
  std::vector<std::string> names;
  for (const TransformerConfig& config : presets()) names.push_back(config.name);
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
