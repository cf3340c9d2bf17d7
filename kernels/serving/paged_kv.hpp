// Serving ops over a paged KV cache (PagedAttention, Kwon et al. 2023): a sequence's keys and values
// live in blocks of `block_tokens` token slots, found through a block table, so a cache grows a
// block at a time instead of being reserved for the longest request.
//
// A block of B slots holds every layer's K and V of its B tokens, grouped by vector: for each
// (layer, K/V, head) in turn, the B tokens' vectors side by side, each D elements of the cache
// dtype (an int8 vector followed by its f32 scale, absmax per token and head, and for D = 256 a
// pad to keep the lanes' accesses aligned). So one head's keys
// in a block are one contiguous run, as the decode reads them; a token-major slot put them a
// slot apart (512 KiB for LLaMA-7B: a DRAM page and a TLB entry per vector read). A block is B x
// slot_bytes() whatever the grouping, and a whole sequence's padded cache (one block of max_len
// slots) or a cache grown by concatenation (one block exactly as long as its context) use the same
// layout: the variants of serve7b differ in memory, not in the kernels.
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
  // Bytes of one token's vector: D elements, and an int8 vector's f32 scale after its codes,
  // padded so that a CUDA lane's share of the next vector (D / 32 bytes, read in one access when
  // that is a power of two) stays aligned: only D = 256 pads, by 4 bytes.
  std::size_t vector_stride() const {
    const std::size_t codes = static_cast<std::size_t>(head_dim) * dtype_size(dtype);
    if (!quantized()) return codes;
    const std::size_t lane = static_cast<std::size_t>(head_dim) / 32;
    std::size_t align = sizeof(float);
    if (head_dim % 32 == 0 && lane > align && (lane & (lane - 1)) == 0) align = lane < 16 ? lane : 16;
    return (codes + sizeof(float) + align - 1) / align * align;
  }
  // Bytes of one token slot: every layer's K and V, and their int8 scales.
  std::size_t slot_bytes() const { return vectors_per_slot() * vector_stride(); }
  // Index of (layer, K = 0 / V = 1, head) among a slot's vectors.
  std::size_t vector_index(std::int64_t layer, int kv, std::int64_t head) const {
    return static_cast<std::size_t>((layer * 2 + kv) * kv_heads + head);
  }
  // Where a block of `block_tokens` slots keeps vector `index` of its slot `slot`.
  std::size_t vector_offset(std::size_t index, std::int64_t slot, std::int64_t block_tokens) const {
    return (index * static_cast<std::size_t>(block_tokens) + static_cast<std::size_t>(slot)) * vector_stride();
  }
};

// Split-K over the context, as flash-decoding does: each split of one (sequence, head) is reduced
// on its own (running max, sum, weighted values) and the splits are combined by their logsumexp,
// so a long context at batch 1 still fills the GPU. A split is kDecodeSplitTokens tokens, doubled
// while the grid keeps kDecodeTargetBlocks (sequence, head, split) blocks: where sequences x heads
// already fill the GPU, a split is the whole context and no block repeats another's set-up. From
// shapes alone, so dry sizes the partials as cuda does.
constexpr std::int64_t kDecodeSplitTokens = 256;
constexpr std::int64_t kDecodeTargetBlocks = 1024;
std::int64_t decode_split_tokens(std::int64_t sequences, std::int64_t heads, std::int64_t max_context);
std::int64_t decode_splits(std::int64_t sequences, std::int64_t heads, std::int64_t max_context);
// Bytes of the partials the decode allocates (Tag::workspace, freed before it returns) on every
// backend: (N, H, splits, D + 2) f32.
std::size_t decode_workspace_bytes(std::int64_t sequences, std::int64_t heads, std::int64_t head_dim,
                                   std::int64_t max_context);

// Writes each row's K and V (from the fused projection) into its token slot for `layer`.
// qkv: (N, H + 2Hkv, D) f32/bf16/f16, the q heads first, then K's, then V's, as the model's fused
// projection lays them out (RoPE already applied to q and k). slots: (N) i64, the address of each
// row's slot in its block (block + slot x vector_stride(); a host address on host), every row's
// block `block_tokens` slots long. An int8 cache is quantised here, per token and head.
void kv_append(const KvLayout& layout, std::int64_t layer, const Tensor& slots, std::int64_t block_tokens,
               const Tensor& qkv);

// One query token per sequence against its whole cached context (which includes its own K/V:
// append first). out (N, H, D) of qkv's dtype; qkv as above (its q heads are read); block_table
// (N, max_blocks) i64 of block addresses; context_lens (N) i32, each in [1, max_context];
// max_context: the largest of them (the host knows it from the schedule; it sizes the splits).
// block_tokens 0: each sequence is one block exactly its context long (a cache grown a token at a
// time). Scale 1/sqrt(D). f32 accumulation; an int8 cache is dequantised as it is read.
void paged_decode_attention(Tensor& out, const Tensor& qkv, const KvLayout& layout, std::int64_t layer,
                            const Tensor& block_table, std::int64_t block_tokens,
                            const Tensor& context_lens, std::int64_t max_context);

// A cache grown by concatenation: the `from_tokens` slots of block `from` into the first slots of
// block `to`, a block of `to_tokens` >= from_tokens (every vector's run moves to its longer place).
void kv_copy_block(Tensor& to, std::int64_t to_tokens, const Tensor& from, std::int64_t from_tokens,
                   const KvLayout& layout);

// RoPE (rope_math.hpp) on token-major rows at their own positions: x (N, heads, D), the first
// `rotated_heads` heads of row n rotated by positions[n] (N) i32. In place. (The fused projection's
// q and k heads, leaving v.)
void rope_at_positions(Tensor& x, std::int64_t rotated_heads, const Tensor& positions, float base);

// Greedy sampling: tokens[n] (N) i32 = argmax over logits[n, 0..vocab) (N, >= vocab) f32/bf16/f16;
// ties go to the lowest index, as torch.argmax does. Columns past `vocab` (padding) are ignored.
void greedy_argmax(Tensor& tokens, const Tensor& logits, std::int64_t vocab);

namespace cuda {
void kv_append(const KvLayout& layout, std::int64_t layer, const Tensor& slots, std::int64_t block_tokens,
               const Tensor& qkv, memory::StreamHandle stream);
void paged_decode_attention(Tensor& out, const Tensor& qkv, const KvLayout& layout, std::int64_t layer,
                            const Tensor& block_table, std::int64_t block_tokens,
                            const Tensor& context_lens, std::int64_t split_tokens, Tensor& partials,
                            memory::StreamHandle stream);
void kv_copy_block(Tensor& to, std::int64_t to_tokens, const Tensor& from, std::int64_t from_tokens,
                   const KvLayout& layout, memory::StreamHandle stream);
void rope_at_positions(Tensor& x, std::int64_t rotated_heads, const Tensor& positions, float base,
                       memory::StreamHandle stream);
void greedy_argmax(Tensor& tokens, const Tensor& logits, std::int64_t vocab, memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
