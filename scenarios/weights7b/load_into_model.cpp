#include "scenarios/weights7b/load_into_model.hpp"

#include <optional>
#include <set>
#include <stdexcept>

namespace oomlab::scenarios::weights7b {
namespace {

std::invalid_argument load_error(const std::string& what) {
  return std::invalid_argument("load into transformer: " + what);
}

}  // namespace

model::TransformerConfig transformer_config_for(const safetensors::LlamaShape& shape,
                                                std::int64_t max_seq) {
  model::TransformerConfig config;
  config.name = shape.name;
  config.style = model::ModelStyle::llama;
  config.architecture = "LlamaForCausalLM";
  config.vocab = shape.vocab;
  config.max_seq = max_seq;
  config.layers = shape.layers;
  config.heads = shape.heads;
  config.kv_heads = shape.kv_heads;  // llama-70b: 8 for 64 query heads
  config.channels = shape.hidden;
  config.head_size = shape.head_dim();
  config.ffn = shape.ffn;
  return config;
}

std::vector<NamedSlice> map_checkpoint_names(model::Transformer& model) {
  const model::TransformerConfig& config = model.config();
  if (config.is_gpt2()) throw load_error(config.name + " is GPT-2 style; LLaMA checkpoints need a llama model");
  model::ParameterTensors& p = model.params();
  const std::int64_t Q = config.q_width(), KV = config.kv_width();
  std::vector<NamedSlice> slices;
  // The model's vocabulary rows are padded to a multiple of 64: the checkpoint fills the real ones.
  slices.push_back({"model.embed_tokens.weight", p.wte.slice(0, config.vocab)});
  for (std::int64_t l = 0; l < config.layers; ++l) {
    const std::string prefix = "model.layers." + std::to_string(l) + ".";
    const Tensor qkv = model::layer_slice(p.qkv_w, l);  // (Q + 2KV, C): rows q, then k, then v
    slices.push_back({prefix + "input_layernorm.weight", model::layer_slice(p.ln1_w, l)});
    slices.push_back({prefix + "self_attn.q_proj.weight", qkv.slice(0, Q)});
    slices.push_back({prefix + "self_attn.k_proj.weight", qkv.slice(Q, Q + KV)});
    slices.push_back({prefix + "self_attn.v_proj.weight", qkv.slice(Q + KV, Q + 2 * KV)});
    slices.push_back({prefix + "self_attn.o_proj.weight", model::layer_slice(p.attn_proj_w, l)});
    slices.push_back({prefix + "post_attention_layernorm.weight", model::layer_slice(p.ln2_w, l)});
    slices.push_back({prefix + "mlp.gate_proj.weight", model::layer_slice(p.fc_w, l)});
    slices.push_back({prefix + "mlp.up_proj.weight", model::layer_slice(p.up_w, l)});
    slices.push_back({prefix + "mlp.down_proj.weight", model::layer_slice(p.proj_w, l)});
  }
  slices.push_back({"model.norm.weight", p.lnf_w});
  slices.push_back({"lm_head.weight", p.lm_head.slice(0, config.vocab)});
  return slices;
}

void copy_weights_into(model::Transformer& model, const LoadedWeights& weights) {
  if (!weights.scales.empty()) {
    throw load_error("the weights are int8 (" + std::to_string(weights.scales.size()) +
                     " scaled matrices); the forward check takes a bf16 load");
  }
  std::vector<NamedSlice> slices = map_checkpoint_names(model);
  std::set<std::string> expected;
  for (const NamedSlice& slice : slices) {
    expected.insert(slice.name);
    const auto found = weights.tensors.find(slice.name);
    if (found == weights.tensors.end()) {
      throw load_error("tensor '" + slice.name + "' is missing from the loaded weights (" +
                       model.config().name + " needs " + std::to_string(slices.size()) + ")");
    }
    const Tensor& source = found->second;
    if (source.shape() != slice.target.shape()) {
      throw load_error("tensor '" + slice.name + "' has shape " + shape_string(source.shape()) +
                       ", " + model.config().name + " expects " + shape_string(slice.target.shape()));
    }
    if (source.dtype() != slice.target.dtype()) {
      throw load_error("tensor '" + slice.name + "' is " + dtype_name(source.dtype()) +
                       ", the model's parameters are " + dtype_name(slice.target.dtype()));
    }
  }
  for (const auto& [name, tensor] : weights.tensors) {
    if (!expected.count(name)) {
      throw load_error("tensor '" + name + "' " + tensor.describe() + " has no place in " +
                       model.config().name);
    }
  }
  for (NamedSlice& slice : slices) {
    slice.target.copy_from(weights.tensors.at(slice.name));
  }
}

std::vector<float> forward_logits(Device& device, const safetensors::LlamaShape& shape,
                                  const LoadedWeights& weights,
                                  const std::vector<std::int32_t>& prompt) {
  if (prompt.empty()) throw load_error("the prompt is empty");
  for (std::int32_t token : prompt) {
    if (token < 0 || token >= shape.vocab) {
      throw load_error("prompt token " + std::to_string(token) + " is outside " + shape.name +
                       "'s vocabulary [0, " + std::to_string(shape.vocab) + ")");
    }
  }
  const auto T = static_cast<std::int64_t>(prompt.size());
  model::TrainOptions options;
  options.precision = model::Precision::bf16;  // the loaders' output dtype: copied bit for bit
  // The constructor's seeded init is overwritten by every tensor of the checkpoint.
  model::Transformer transformer(device, transformer_config_for(shape, T), options, /*seed=*/1);
  copy_weights_into(transformer, weights);

  // Targets only feed the loss, which the logits do not depend on: the prompt shifted by one.
  std::vector<float> ids(prompt.begin(), prompt.end());
  std::vector<float> next(prompt.begin() + 1, prompt.end());
  next.push_back(static_cast<float>(prompt.front()));
  const Tensor tokens = Tensor::from_host(device, {1, T}, DType::i32, ids);
  const Tensor targets = Tensor::from_host(device, {1, T}, DType::i32, next);
  transformer.forward(tokens, targets, std::nullopt);
  const std::vector<float> padded = transformer.logits().to_host_f32();  // (T, padded vocab)
  const std::int64_t V = shape.vocab, padded_vocab = transformer.config().padded_vocab();
  std::vector<float> logits;
  logits.reserve(static_cast<std::size_t>(T * V));
  for (std::int64_t t = 0; t < T; ++t) {
    const auto row = padded.begin() + t * padded_vocab;
    logits.insert(logits.end(), row, row + V);
  }
  return logits;
}

}  // namespace oomlab::scenarios::weights7b
