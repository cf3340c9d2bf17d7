#include "scenarios/models/transformer/parameter_tensors.hpp"

namespace oomlab::model {

std::vector<ParameterSpec> parameter_specs(const TransformerConfig& c) {
  const std::int64_t V = c.padded_vocab(), T = c.max_seq, L = c.layers, C = c.channels, F = c.ffn;
  const std::int64_t QKV = c.qkv_width(), Q = c.q_width();
  using P = ParameterTensors;
  const bool gpt2 = c.is_gpt2();
  std::vector<ParameterSpec> specs;
  specs.push_back({"wte", &P::wte, {V, C}, true, InitKind::normal});
  if (gpt2) specs.push_back({"wpe", &P::wpe, {T, C}, true, InitKind::normal});
  specs.push_back({"ln1_w", &P::ln1_w, {L, C}, false, InitKind::ones});
  if (gpt2) specs.push_back({"ln1_b", &P::ln1_b, {L, C}, false, InitKind::zeros});
  specs.push_back({"qkv_w", &P::qkv_w, {L, QKV, C}, true, InitKind::normal});
  if (c.qkv_bias) specs.push_back({"qkv_b", &P::qkv_b, {L, QKV}, false, InitKind::zeros});
  specs.push_back({"attn_proj_w", &P::attn_proj_w, {L, C, Q}, true, InitKind::residual_normal});
  if (gpt2) specs.push_back({"attn_proj_b", &P::attn_proj_b, {L, C}, false, InitKind::zeros});
  specs.push_back({"ln2_w", &P::ln2_w, {L, C}, false, InitKind::ones});
  if (gpt2) specs.push_back({"ln2_b", &P::ln2_b, {L, C}, false, InitKind::zeros});
  specs.push_back({"fc_w", &P::fc_w, {L, F, C}, true, InitKind::normal});
  if (gpt2) specs.push_back({"fc_b", &P::fc_b, {L, F}, false, InitKind::zeros});
  if (!gpt2) specs.push_back({"up_w", &P::up_w, {L, F, C}, true, InitKind::normal});
  specs.push_back({"proj_w", &P::proj_w, {L, C, F}, true, InitKind::residual_normal});
  if (gpt2) specs.push_back({"proj_b", &P::proj_b, {L, C}, false, InitKind::zeros});
  specs.push_back({"lnf_w", &P::lnf_w, {C}, false, InitKind::ones});
  if (gpt2) specs.push_back({"lnf_b", &P::lnf_b, {C}, false, InitKind::zeros});
  if (!c.tied_embeddings) specs.push_back({"lm_head", &P::lm_head, {V, C}, true, InitKind::normal});
  return specs;
}

std::size_t parameter_elements(const TransformerConfig& config) {
  std::size_t total = 0;
  for (const ParameterSpec& spec : parameter_specs(config)) {
    total += static_cast<std::size_t>(shape_numel(spec.shape));
  }
  return total;
}

DType gradient_dtype(const ParameterSpec& spec, Precision precision) {
  return spec.compute_dtype_grad ? compute_dtype(precision) : DType::f32;
}

bool stacked_per_layer(const ParameterSpec& spec) {
  using P = ParameterTensors;
  for (Tensor P::*outer : {&P::wte, &P::wpe, &P::lnf_w, &P::lnf_b, &P::lm_head}) {
    if (spec.member == outer) return false;
  }
  return true;
}

Tensor layer_slice(const Tensor& stacked, std::int64_t layer) {
  Shape inner(stacked.shape().begin() + 1, stacked.shape().end());
  return stacked.slice(layer, layer + 1).view(inner);
}

Tensor layer_of(const Tensor& stacked, std::int64_t layer) {
  return stacked.defined() ? layer_slice(stacked, layer) : Tensor();
}

}  // namespace oomlab::model
