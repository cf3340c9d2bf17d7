#include "scenarios/models/transformer/activation_tensors.hpp"

namespace oomlab::model {
namespace {

// Saturating: at B = T = 2^20 the scores alone pass 2^64 bytes (see kSizeSaturated).
SaturatingSize bytes_of(const Shape& shape, DType dtype) {
  return SaturatingSize(static_cast<std::size_t>(shape_numel(shape))) * dtype_size(dtype);
}

}  // namespace

ActivationShapes activation_shapes(const TransformerConfig& c, std::int64_t B, std::int64_t T) {
  const std::int64_t C = c.channels, H = c.heads, D = c.head_dim();
  ActivationShapes s;
  s.hidden = {B, T, C};
  s.qkv = {B, T, c.qkv_width()};
  s.heads = {B, H, T, D};
  s.kv_heads = {B, c.kv_head_count(), T, D};
  s.attn = {B, T, c.q_width()};
  s.scores = {B, H, T, T};
  s.lse = {B, H, T};
  s.mlp = {B, T, c.ffn};
  s.rows = {B * T};
  s.logits = {B, T, c.padded_vocab()};
  return s;
}

std::size_t block_activation_bytes(const TransformerConfig& config, const TrainOptions& options,
                                   std::int64_t batch, std::int64_t seq) {
  const ActivationShapes s = activation_shapes(config, batch, seq);
  const DType cd = compute_dtype(options.precision);
  const DType ad = attention_dtype(options.attention);
  const SaturatingSize norm_stats = SaturatingSize(config.is_gpt2() ? 2 : 1) * bytes_of(s.rows, DType::f32);
  SaturatingSize bytes = SaturatingSize(2) * (bytes_of(s.hidden, cd) + norm_stats);  // ln1, ln2 and their stats
  bytes += bytes_of(s.heads, ad) + SaturatingSize(2) * bytes_of(s.kv_heads, ad);  // q, k, v
  bytes += options.attention == AttentionKind::naive
               ? bytes_of(s.scores, ad)
               : bytes_of(s.heads, ad) + bytes_of(s.lse, DType::f32);
  bytes += bytes_of(s.attn, cd) + bytes_of(s.hidden, cd);           // attn_out, residual_mid
  bytes += SaturatingSize(config.is_gpt2() ? 1 : 2) * bytes_of(s.mlp, cd);  // fc | gate, up
  return bytes.value;
}

std::size_t outer_activation_bytes(const TransformerConfig& config, const TrainOptions& options,
                                   std::int64_t batch, std::int64_t seq) {
  const ActivationShapes s = activation_shapes(config, batch, seq);
  const DType cd = compute_dtype(options.precision);
  const SaturatingSize norm_stats = SaturatingSize(config.is_gpt2() ? 2 : 1) * bytes_of(s.rows, DType::f32);
  const SaturatingSize layers_plus_one = static_cast<std::size_t>(config.layers + 1);
  const SaturatingSize residual_stream = layers_plus_one * bytes_of(s.hidden, cd);
  const SaturatingSize total = residual_stream + bytes_of(s.hidden, cd) + norm_stats + bytes_of(s.logits, cd) +
                               bytes_of(s.rows, DType::f32);
  return total.value;
}

}  // namespace oomlab::model
