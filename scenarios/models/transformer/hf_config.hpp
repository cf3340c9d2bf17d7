// A model's shape from a Hugging Face config.json, so a user's own model is a file, not new code:
// LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM (the llama style: RMSNorm, SwiGLU, RoPE;
// Qwen2 with q/k/v biases) and GPT2LMHeadModel. The fields read, with the defaults of their
// transformers config classes where a file may leave one out:
//   hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, vocab_size   required
//   num_key_value_heads  = num_attention_heads        head_dim  = hidden_size / heads
//   tie_word_embeddings  = false (GPT-2: true)         rope_theta = 10000
//   max_position_embeddings = 2048 (Mistral 131072, Qwen2 32768)
//   sliding_window (Mistral; Qwen2 only with use_sliding_window), torch_dtype (or dtype)
//   attention_bias: Qwen2 always has q/k/v biases; a Llama with attention_bias=true (o_proj too)
//                   is refused, not approximated (as is mlp_bias=true)
//   GPT-2: n_embd, n_layer, n_head, vocab_size required; n_positions = 1024, n_inner = 4 n_embd
// The file is user input: read only when a regular file of at most 1 MiB (a config is a few
// hundred bytes), parsed with nesting capped and repeated keys refused, every number checked for
// type and range (so every product of sizes stays far inside 64 bits).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "scenarios/models/transformer/transformer_config.hpp"

namespace oomlab::model {

constexpr std::size_t kMaxHfConfigBytes = std::size_t{1} << 20;

// The architectures a config may name (the first of its "architectures").
bool supported_hf_architecture(std::string_view architecture);

// Parses config.json text; `label` names it in messages and becomes the config's name. Throws
// std::invalid_argument with one line naming the field at fault (and the file).
TransformerConfig parse_hf_config(std::string_view json_text, const std::string& label);

// `path` is a config.json or a folder holding one. Throws std::invalid_argument, one line, for a
// missing file, a non-regular one (a FIFO, a device), one over kMaxHfConfigBytes, or bad content.
// The config's name: the folder's ("Meta-Llama-3-8B"), or the file's stem when not config.json.
TransformerConfig read_hf_config(const std::string& path);
// The config.json `path` names, absolute (a folder's config.json), without reading it.
std::string hf_config_file(const std::string& path);

}  // namespace oomlab::model
