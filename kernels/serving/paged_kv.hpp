// Serving ops over a paged KV cache (PagedAttention, Kwon et al. 2023): a sequence's keys and values
// live in blocks of `block_tokens` token slots, found through a block table, so a cache grows a
// block at a time instead of being reserved for the longest request.
//
// One token slot holds that token's K and V for EVERY layer: [L][2][Hkv][D] of the cache dtype,
// and for an int8 cache after the codes one f32 scale per (layer, K/V, head): [L][2][Hkv]. The
// slot is token-major and self-contained, so a block of any length, a whole sequence's padded
// cache (one block of max_len slots) or a cache grown by concatenation (one block of its current
// length) are all the same layout: the variants of serve7b differ in memory, not in the kernels.
//
// A block table holds each block's address (i64), so blocks may be separate allocations of the
// caching allocator. Grouped-query attention is the general case: query head h reads KV head
// h / (H / Hkv).
#pragma once
#include <cstddef>
#include <cstdint>

#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

struct KvLayout {
  std::int64_t layers = 0;     // L
  std::int64_t kv_heads = 0;   // Hkv
  std::int64_t head_dim = 0;   // D
  DType dtype = DType::bf16;   // f32, bf16, f16, or i8 (absmax per token and head, quantised on append)

  bool quantized() const { return dtype == DType::i8; }
  std::size_t vectors_per_slot() const { return static_cast<std::size_t>(layers * 2 * kv_heads); }
  // Bytes of one token slot: every layer's K and V, plus the int8 scales.
  std::size_t slot_bytes() const {
    return vectors_per_slot() * (static_cast<std::size_t>(head_dim) * dtype_size(dtype) +
                                 (quantized() ? sizeof(float) : 0));
  }
  // Index of (layer, K = 0 / V = 1, head) among a slot's vectors.
  std::size_t vector_index(std::int64_t layer, int kv, std::int64_t head) const {
    return static_cast<std::size_t>((layer * 2 + kv) * kv_heads + head);
  }
  std::size_t vector_offset(std::size_t index) const {
    return index * static_cast<std::size_t>(head_dim) * dtype_size(dtype);
  }
  std::size_t scale_offset(std::size_t index) const {  // int8 only
    return vectors_per_slot() * static_cast<std::size_t>(head_dim) + index * sizeof(float);
  }
};

// Split-K over the context, as flash-decoding does: each split of kDecodeSplitTokens tokens of one
// (sequence, head) is reduced on its own (running max, sum, weighted values) and the splits are
// combined by their logsumexp, so a long context at batch 1 still fills the GPU.
constexpr std::int64_t kDecodeSplitTokens = 256;
std::int64_t decode_splits(std::int64_t max_context);
// Bytes of the partials the decode allocates (Tag::workspace, freed before it returns) on every
// backend: (N, H, splits, D + 2) f32.
std::size_t decode_workspace_bytes(std::int64_t sequences, std::int64_t heads, std::int64_t head_dim,
                                   std::int64_t max_context);

// Writes each row's K and V (from the fused projection) into its token slot for `layer`.
// qkv: (N, H + 2Hkv, D) f32/bf16/f16, the q heads first, then K's, then V's, as the model's fused
// projection lays them out (RoPE already applied to q and k). slots: (N) i64, the address of each
// row's token slot (a host address on host). An int8 cache is quantised here, per token and head.
void kv_append(const KvLayout& layout, std::int64_t layer, const Tensor& slots, const Tensor& qkv);

// One query token per sequence against its whole cached context (which includes its own K/V:
// append first). out (N, H, D) of qkv's dtype; qkv as above (its q heads are read); block_table
// (N, max_blocks) i64 of block addresses; context_lens (N) i32, each in [1, max_context];
// max_context: the largest of them (the host knows it from the schedule; it sizes the splits).
// Scale 1/sqrt(D). f32 accumulation; an int8 cache is dequantised as it is read.
void paged_decode_attention(Tensor& out, const Tensor& qkv, const KvLayout& layout, std::int64_t layer,
                            const Tensor& block_table, std::int64_t block_tokens,
                            const Tensor& context_lens, std::int64_t max_context);

// RoPE (rope_math.hpp) on token-major rows at their own positions: x (N, heads, D), the first
// `rotated_heads` heads of row n rotated by positions[n] (N) i32. In place. (The fused projection's
// q and k heads, leaving v.)
void rope_at_positions(Tensor& x, std::int64_t rotated_heads, const Tensor& positions, float base);

// Greedy sampling: tokens[n] (N) i32 = argmax over logits[n, 0..vocab) (N, >= vocab) f32/bf16/f16;
// ties go to the lowest index, as torch.argmax does. Columns past `vocab` (padding) are ignored.
void greedy_argmax(Tensor& tokens, const Tensor& logits, std::int64_t vocab);

namespace cuda {
void kv_append(const KvLayout& layout, std::int64_t layer, const Tensor& slots, const Tensor& qkv,
               memory::StreamHandle stream);
void paged_decode_attention(Tensor& out, const Tensor& qkv, const KvLayout& layout, std::int64_t layer,
                            const Tensor& block_table, std::int64_t block_tokens,
                            const Tensor& context_lens, std::int64_t splits, Tensor& partials,
                            memory::StreamHandle stream);
void rope_at_positions(Tensor& x, std::int64_t rotated_heads, const Tensor& positions, float base,
                       memory::StreamHandle stream);
void greedy_argmax(Tensor& tokens, const Tensor& logits, std::int64_t vocab, memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
