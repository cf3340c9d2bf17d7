#include "scenarios/models/transformer/activation_tensors.hpp"

namespace oomlab::model {
namespace {

std::size_t bytes_of(const Shape& shape, DType dtype) {
  return static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
}

}  // namespace

ActivationShapes activation_shapes(const TransformerConfig& c, std::int64_t B, std::int64_t T) {
  const std::int64_t C = c.channels, H = c.heads, D = c.head_dim();
  return ActivationShapes{{B, T, C},    {B, T, 3 * C}, {B, H, T, D},       {B, H, T, T},
                          {B, H, T},    {B, T, c.ffn}, {B * T},            {B, T, c.padded_vocab()}};
}

std::size_t block_activation_bytes(const TransformerConfig& config, const TrainOptions& options,
                                   std::int64_t batch, std::int64_t seq) {
  const ActivationShapes s = activation_shapes(config, batch, seq);
  const DType cd = compute_dtype(options.precision);
  const DType ad = attention_dtype(options.attention);
  const std::size_t norm_stats = (config.is_gpt2() ? 2 : 1) * bytes_of(s.rows, DType::f32);
  std::size_t bytes = 2 * (bytes_of(s.hidden, cd) + norm_stats);  // ln1, ln2 and their stats
  bytes += 3 * bytes_of(s.heads, ad);                               // q, k, v
  bytes += options.attention == AttentionKind::naive
               ? bytes_of(s.scores, ad)
               : bytes_of(s.heads, ad) + bytes_of(s.lse, DType::f32);
  bytes += 2 * bytes_of(s.hidden, cd);                              // attn_out, residual_mid
  bytes += (config.is_gpt2() ? 1 : 2) * bytes_of(s.mlp, cd);        // fc | gate, up
  return bytes;
}

std::size_t outer_activation_bytes(const TransformerConfig& config, const TrainOptions& options,
                                   std::int64_t batch, std::int64_t seq) {
  const ActivationShapes s = activation_shapes(config, batch, seq);
  const DType cd = compute_dtype(options.precision);
  const std::size_t norm_stats = (config.is_gpt2() ? 2 : 1) * bytes_of(s.rows, DType::f32);
  const auto residual_stream = static_cast<std::size_t>(config.layers + 1) * bytes_of(s.hidden, cd);
  return residual_stream + bytes_of(s.hidden, cd) + norm_stats + bytes_of(s.logits, cd) +
         bytes_of(s.rows, DType::f32);
}

}  // namespace oomlab::model
