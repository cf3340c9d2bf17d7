// Serving ops: checks, CPU references and dispatch (paged_kv.hpp).
#include "kernels/serving/paged_kv.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"
#include "kernels/transformer/quantize_math.hpp"
#include "kernels/transformer/rope_math.hpp"

namespace oomlab::ops {
namespace {

using memory::Tag;

char* slot_address(std::int64_t address) { return reinterpret_cast<char*>(static_cast<std::intptr_t>(address)); }

void check_layout(const char* op, const KvLayout& layout, std::int64_t layer) {
  OOMLAB_CHECK(layout.layers > 0 && layout.kv_heads > 0 && layout.head_dim > 0,
               op << ": the KV layout needs layers, kv_heads and head_dim above 0");
  OOMLAB_CHECK(layout.dtype == DType::f32 || layout.dtype == DType::bf16 || layout.dtype == DType::f16 ||
                   layout.dtype == DType::i8,
               op << ": a KV cache of " << dtype_name(layout.dtype) << " is not supported (f32, bf16, f16, i8)");
  OOMLAB_CHECK(layer >= 0 && layer < layout.layers, op << ": layer " << layer << " outside 0.." << layout.layers - 1);
}

// qkv (N, H + 2Hkv, D): returns H.
std::int64_t check_qkv(const char* op, const Tensor& qkv, const KvLayout& layout) {
  check_dtype(op, "qkv", qkv, kFloatDtypes);
  OOMLAB_CHECK(qkv.ndim() == 3 && qkv.dim(2) == layout.head_dim && qkv.dim(1) > 2 * layout.kv_heads,
               op << ": qkv must be (N, H + 2Hkv, D) with Hkv " << layout.kv_heads << " and D " << layout.head_dim
                  << ", got " << shape_string(qkv.shape()));
  const std::int64_t heads = qkv.dim(1) - 2 * layout.kv_heads;
  OOMLAB_CHECK(heads % layout.kv_heads == 0,
               op << ": " << heads << " query heads do not form groups over " << layout.kv_heads << " KV heads");
  return heads;
}

// The K (kv 0) or V (kv 1) vector of KV head `head` at token `t` of a sequence, as f32.
// block_tokens 0: the sequence is one block of `context` slots.
void load_cached(std::vector<float>& into, const KvLayout& layout, const std::int64_t* table, std::int64_t block_tokens,
                 std::int64_t context, std::int64_t t, std::int64_t layer, int kv, std::int64_t head) {
  const std::int64_t tokens = block_tokens == 0 ? context : block_tokens;
  const char* vector = slot_address(table[t / tokens]) +
                       layout.vector_offset(layout.vector_index(layer, kv, head), t % tokens, tokens);
  const std::size_t dim = static_cast<std::size_t>(layout.head_dim);
  into.resize(dim);
  if (layout.quantized()) {
    float scale;
    std::memcpy(&scale, vector + dim, sizeof scale);
    for (std::size_t d = 0; d < dim; ++d)
      into[d] = static_cast<float>(reinterpret_cast<const std::int8_t*>(vector)[d]) * scale;
  } else {
    for (std::size_t d = 0; d < dim; ++d) into[d] = load_as_float(vector, layout.dtype, d);
  }
}

void host_kv_append(const KvLayout& layout, std::int64_t layer, const Tensor& slots, std::int64_t block_tokens,
                    const Tensor& qkv) {
  const std::int64_t rows = qkv.dim(0), heads = qkv.dim(1) - 2 * layout.kv_heads, dim = layout.head_dim;
  const auto* addresses = slots.data_as<std::int64_t>();
  for (std::int64_t n = 0; n < rows; ++n) {
    char* slot = slot_address(addresses[n]);
    for (int kv = 0; kv < 2; ++kv) {
      for (std::int64_t g = 0; g < layout.kv_heads; ++g) {
        const std::size_t source =
            static_cast<std::size_t>(((n * qkv.dim(1)) + heads + kv * layout.kv_heads + g) * dim);
        // The slot's address is its vector 0's; vector i is i blocks' worth of runs further.
        char* vector = slot + layout.vector_offset(layout.vector_index(layer, kv, g), 0, block_tokens);
        if (!layout.quantized()) {
          for (std::int64_t d = 0; d < dim; ++d) {
            store_value(vector, layout.dtype, static_cast<std::size_t>(d),
                        load_as_float(qkv.data(), qkv.dtype(), source + static_cast<std::size_t>(d)));
          }
          continue;
        }
        float absmax = 0.0f;
        for (std::int64_t d = 0; d < dim; ++d) {
          absmax =
              std::max(absmax, std::fabs(load_as_float(qkv.data(), qkv.dtype(), source + static_cast<std::size_t>(d))));
        }
        const float inverse = int8_inverse_scale(absmax), scale = int8_scale_from_absmax(absmax);
        for (std::int64_t d = 0; d < dim; ++d) {
          reinterpret_cast<std::int8_t*>(vector)[d] =
              quantize_int8(load_as_float(qkv.data(), qkv.dtype(), source + static_cast<std::size_t>(d)), inverse);
        }
        std::memcpy(vector + dim, &scale, sizeof scale);
      }
    }
  }
}

// The reference: a plain two-pass softmax over the whole context in f32, whatever the blocks.
void host_decode(Tensor& out, const Tensor& qkv, const KvLayout& layout, std::int64_t layer, const Tensor& block_table,
                 std::int64_t block_tokens, const Tensor& context_lens) {
  const std::int64_t rows = qkv.dim(0), heads = qkv.dim(1) - 2 * layout.kv_heads, dim = layout.head_dim;
  const std::int64_t group = heads / layout.kv_heads, max_blocks = block_table.dim(1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  const auto* lens = context_lens.data_as<std::int32_t>();
  std::vector<float> q(static_cast<std::size_t>(dim)), key, value, scores, acc(static_cast<std::size_t>(dim));
  for (std::int64_t n = 0; n < rows; ++n) {
    const std::int64_t context = lens[n];
    OOMLAB_CHECK(context >= 1 && (block_tokens == 0 || (context + block_tokens - 1) / block_tokens <= max_blocks),
                 "paged_decode_attention: context " << context << " of row " << n << " does not fit its "
                                                    << max_blocks << " blocks of " << block_tokens);
    const std::int64_t* table = block_table.data_as<std::int64_t>() + n * max_blocks;
    for (std::int64_t h = 0; h < heads; ++h) {
      for (std::int64_t d = 0; d < dim; ++d) {
        q[static_cast<std::size_t>(d)] =
            load_as_float(qkv.data(), qkv.dtype(), static_cast<std::size_t>((n * qkv.dim(1) + h) * dim + d));
      }
      scores.assign(static_cast<std::size_t>(context), 0.0f);
      float max_score = -std::numeric_limits<float>::infinity();
      for (std::int64_t t = 0; t < context; ++t) {
        load_cached(key, layout, table, block_tokens, context, t, layer, 0, h / group);
        float dot = 0.0f;
        for (std::int64_t d = 0; d < dim; ++d) dot += q[static_cast<std::size_t>(d)] * key[static_cast<std::size_t>(d)];
        scores[static_cast<std::size_t>(t)] = dot * scale;
        max_score = std::max(max_score, dot * scale);
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      float sum = 0.0f;
      for (std::int64_t t = 0; t < context; ++t) {
        const float p = std::exp(scores[static_cast<std::size_t>(t)] - max_score);
        sum += p;
        load_cached(value, layout, table, block_tokens, context, t, layer, 1, h / group);
        for (std::int64_t d = 0; d < dim; ++d)
          acc[static_cast<std::size_t>(d)] += p * value[static_cast<std::size_t>(d)];
      }
      for (std::int64_t d = 0; d < dim; ++d) {
        store_value(out.data(), out.dtype(), static_cast<std::size_t>((n * heads + h) * dim + d),
                    acc[static_cast<std::size_t>(d)] / sum);
      }
    }
  }
}

}  // namespace

std::int64_t decode_split_tokens(std::int64_t sequences, std::int64_t heads, std::int64_t max_context) {
  std::int64_t tokens = kDecodeSplitTokens;
  const std::int64_t pairs = std::max<std::int64_t>(1, sequences * heads);
  while (tokens < max_context && pairs * ((max_context + 2 * tokens - 1) / (2 * tokens)) >= kDecodeTargetBlocks) {
    tokens *= 2;
  }
  return tokens;
}

std::int64_t decode_splits(std::int64_t sequences, std::int64_t heads, std::int64_t max_context) {
  const std::int64_t tokens = decode_split_tokens(sequences, heads, max_context);
  return std::max<std::int64_t>(1, (max_context + tokens - 1) / tokens);
}

std::size_t decode_workspace_bytes(std::int64_t sequences, std::int64_t heads, std::int64_t head_dim,
                                   std::int64_t max_context) {
  return static_cast<std::size_t>(sequences * heads * decode_splits(sequences, heads, max_context) * (head_dim + 2)) *
         sizeof(float);
}

void kv_append(const KvLayout& layout, std::int64_t layer, const Tensor& slots, std::int64_t block_tokens,
               const Tensor& qkv) {
  const char* op = "kv_append";
  check_layout(op, layout, layer);
  check_qkv(op, qkv, layout);
  OOMLAB_CHECK(block_tokens > 0, op << ": blocks of " << block_tokens << " slots");
  check_shape(op, "slots", slots, {qkv.dim(0)});
  check_dtype(op, "slots", slots, {DType::i64});
  check_same_device(op, {&slots, &qkv});
  switch (qkv.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: return host_kv_append(layout, layer, slots, block_tokens, qkv);
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::kv_append(layout, layer, slots, block_tokens, qkv, qkv.device().stream());
#endif
      throw_no_cuda(op);
  }
}

void paged_decode_attention(Tensor& out, const Tensor& qkv, const KvLayout& layout, std::int64_t layer,
                            const Tensor& block_table, std::int64_t block_tokens, const Tensor& context_lens,
                            std::int64_t max_context) {
  const char* op = "paged_decode_attention";
  check_layout(op, layout, layer);
  const std::int64_t heads = check_qkv(op, qkv, layout), rows = qkv.dim(0);
  check_shape(op, "out", out, {rows, heads, layout.head_dim});
  check_same_dtype(op, out, qkv);
  check_dtype(op, "block_table", block_table, {DType::i64});
  OOMLAB_CHECK(block_table.ndim() == 2 && block_table.dim(0) == rows && block_table.dim(1) > 0,
               op << ": block_table must be (N, max_blocks), got " << shape_string(block_table.shape()));
  check_shape(op, "context_lens", context_lens, {rows});
  check_dtype(op, "context_lens", context_lens, {DType::i32});
  OOMLAB_CHECK(block_tokens >= 0 && max_context > 0 &&
                   (block_tokens == 0 ? block_table.dim(1) == 1 : max_context <= block_tokens * block_table.dim(1)),
               op << ": max_context " << max_context << " must be in 1.." << block_tokens * block_table.dim(1)
                  << " (blocks of " << block_tokens << "; 0: one block a sequence, its context long)");
  check_same_device(op, {&out, &qkv, &block_table, &context_lens});
  // The split partials, on every backend, so dry and host make cuda's request.
  const std::int64_t splits = decode_splits(rows, heads, max_context);
  Tensor partials = Tensor::empty(qkv.device(), {rows, heads, splits, layout.head_dim + 2}, DType::f32, Tag::workspace);
  switch (qkv.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: return host_decode(out, qkv, layout, layer, block_table, block_tokens, context_lens);
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::paged_decode_attention(out, qkv, layout, layer, block_table, block_tokens, context_lens,
                                          decode_split_tokens(rows, heads, max_context), partials,
                                          qkv.device().stream());
#endif
      throw_no_cuda(op);
  }
}

void kv_copy_block(Tensor& to, std::int64_t to_tokens, const Tensor& from, std::int64_t from_tokens,
                   const KvLayout& layout) {
  const char* op = "kv_copy_block";
  check_layout(op, layout, 0);
  OOMLAB_CHECK(from_tokens >= 0 && to_tokens >= from_tokens, op << ": " << from_tokens << " slots into a block of "
                                                                  << to_tokens);
  OOMLAB_CHECK(from.nbytes() >= layout.slot_bytes() * static_cast<std::size_t>(from_tokens) &&
                   to.nbytes() >= layout.slot_bytes() * static_cast<std::size_t>(to_tokens),
               op << ": blocks of " << from.nbytes() << " and " << to.nbytes() << " bytes hold fewer than "
                  << from_tokens << " and " << to_tokens << " slots");
  check_same_device(op, {&to, &from});
  if (from_tokens == 0) return;
  const std::size_t run = static_cast<std::size_t>(from_tokens) * layout.vector_stride();
  switch (to.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::size_t i = 0; i < layout.vectors_per_slot(); ++i) {
        std::memcpy(static_cast<char*>(to.data()) + layout.vector_offset(i, 0, to_tokens),
                    static_cast<const char*>(from.data()) + layout.vector_offset(i, 0, from_tokens), run);
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::kv_copy_block(to, to_tokens, from, from_tokens, layout, to.device().stream());
#endif
      throw_no_cuda(op);
  }
}

void rope_at_positions(Tensor& x, std::int64_t rotated_heads, const Tensor& positions, float base) {
  const char* op = "rope_at_positions";
  check_dtype(op, "x", x, kFloatDtypes);
  OOMLAB_CHECK(x.ndim() == 3 && x.dim(2) % 2 == 0 && rotated_heads >= 0 && rotated_heads <= x.dim(1),
               op << ": x must be (N, heads, D) with an even D and rotated_heads <= heads, got "
                  << shape_string(x.shape()) << " and " << rotated_heads);
  check_shape(op, "positions", positions, {x.dim(0)});
  check_dtype(op, "positions", positions, {DType::i32});
  OOMLAB_CHECK(base > 1.0f, op << ": the base must be above 1");
  check_same_device(op, {&x, &positions});
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      const std::int64_t dim = x.dim(2), half = dim / 2;
      for (std::int64_t n = 0; n < x.dim(0); ++n) {
        const long long position = positions.data_as<std::int32_t>()[n];
        for (std::int64_t h = 0; h < rotated_heads; ++h) {
          const std::size_t start = static_cast<std::size_t>((n * x.dim(1) + h) * dim);
          for (std::int64_t i = 0; i < half; ++i) {
            const std::size_t a = start + static_cast<std::size_t>(i), b = a + static_cast<std::size_t>(half);
            float first = load_as_float(x.data(), x.dtype(), a), second = load_as_float(x.data(), x.dtype(), b);
            rope_rotate_pair(first, second, rope_angle(position, static_cast<int>(i), static_cast<int>(dim), base),
                             false);
            store_value(x.data(), x.dtype(), a, first);
            store_value(x.data(), x.dtype(), b, second);
          }
        }
      }
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::rope_at_positions(x, rotated_heads, positions, base, x.device().stream());
#endif
      throw_no_cuda(op);
  }
}

void greedy_argmax(Tensor& tokens, const Tensor& logits, std::int64_t vocab) {
  const char* op = "greedy_argmax";
  check_dtype(op, "logits", logits, kFloatDtypes);
  OOMLAB_CHECK(logits.ndim() == 2 && vocab > 0 && vocab <= logits.dim(1),
               op << ": logits must be (N, >= vocab " << vocab << "), got " << shape_string(logits.shape()));
  check_shape(op, "tokens", tokens, {logits.dim(0)});
  check_dtype(op, "tokens", tokens, {DType::i32});
  check_same_device(op, {&tokens, &logits});
  switch (logits.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::int64_t n = 0; n < logits.dim(0); ++n) {
        std::int32_t best = 0;
        float best_value = -std::numeric_limits<float>::infinity();
        for (std::int64_t v = 0; v < vocab; ++v) {
          const float value =
              load_as_float(logits.data(), logits.dtype(), static_cast<std::size_t>(n * logits.dim(1) + v));
          if (value > best_value) {  // strict: the first of equal values wins; NaN never does
            best_value = value;
            best = static_cast<std::int32_t>(v);
          }
        }
        tokens.data_as<std::int32_t>()[n] = best;
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::greedy_argmax(tokens, logits, vocab, logits.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
