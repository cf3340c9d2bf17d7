// The serving ops on host and dry: decode over a paged cache equals dense attention whatever the
// block size (grouped-query heads, an int8 cache within its rounding), RoPE at positions equals the
// training RoPE, argmax takes the first maximum, and dry allocates what the others do.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/serving/paged_kv.hpp"
#include "kernels/serving/tests/paged_kv_case.hpp"
#include "kernels/testing/compare.hpp"
#include "kernels/transformer/rope.hpp"

namespace oomlab::ops {
namespace {

using testing_serving::PagedCase;

PagedCase gqa_case(DType kv_dtype, std::int64_t block_tokens) {
  PagedCase c;
  c.layout = {2, 2, 16, kv_dtype};  // L 2, Hkv 2, D 16
  c.heads = 4;                      // two query heads per KV head
  c.block_tokens = block_tokens;
  c.contexts = {1, 7, 16, 300};     // 300: two splits of kDecodeSplitTokens
  c.qkv_dtype = DType::bf16;
  return c;
}

std::vector<float> decode_on(Device& device, const PagedCase& c, std::vector<float>* reference = nullptr) {
  auto cache = testing_serving::fill_cache(device, c, 11);
  const std::int64_t n = static_cast<std::int64_t>(c.contexts.size());
  Tensor query = oomlab::testing::random_tensor(device, {n, c.heads + 2 * c.layout.kv_heads, c.layout.head_dim},
                                                c.qkv_dtype, 99, -2.0f, 2.0f);
  Tensor out = Tensor::empty(device, {n, c.heads, c.layout.head_dim}, c.qkv_dtype);
  paged_decode_attention(out, query, c.layout, c.layer, cache.table, c.block_tokens, cache.lens, cache.max_context);
  if (reference) *reference = testing_serving::dense_decode(c, cache, query.to_host_f32());
  return out.to_host_f32();
}

TEST(PagedDecodeHost, EqualsDenseAttentionWithGroupedHeads) {
  Device device(DeviceKind::host, {});
  for (std::int64_t block_tokens : {1, 4, 16, 512, 0}) {
    std::vector<float> reference;
    const auto got = decode_on(device, gqa_case(DType::bf16, block_tokens), &reference);
    EXPECT_TRUE(oomlab::testing::all_close(got, reference, oomlab::testing::tolerance_for(DType::bf16),
                                           "block_tokens " + std::to_string(block_tokens)));
  }
}

// The variants of serve7b rely on this: the same values give the same bits in any block layout.
TEST(PagedDecodeHost, BlockSizeChangesNoBit) {
  Device device(DeviceKind::host, {});
  const auto one = decode_on(device, gqa_case(DType::bf16, 1));
  EXPECT_EQ(decode_on(device, gqa_case(DType::bf16, 16)), one);
  EXPECT_EQ(decode_on(device, gqa_case(DType::bf16, 512)), one);
  EXPECT_EQ(decode_on(device, gqa_case(DType::bf16, 0)), one);  // one block a sequence, its context long
}

// A cache grown by concatenation moves into a longer block: every vector's run to its new place.
// Decoding the longer block (its first slots) gives what the shorter one gave, bit for bit.
TEST(PagedDecodeHost, ACopiedBlockDecodesAsTheOriginal) {
  for (DType kv_dtype : {DType::bf16, DType::i8}) {
    Device device(DeviceKind::host, {});
    PagedCase c = gqa_case(kv_dtype, 0);
    c.contexts = {37};
    auto cache = testing_serving::fill_cache(device, c, 5);
    Tensor longer = Tensor::zeros(device, {static_cast<std::int64_t>(c.layout.slot_bytes()) * 40}, DType::i8);
    kv_copy_block(longer, 40, cache.blocks[0], 37, c.layout);
    Tensor query = oomlab::testing::random_tensor(device, {1, c.heads + 2 * c.layout.kv_heads, c.layout.head_dim},
                                                  DType::bf16, 8, -2.0f, 2.0f);
    Tensor before = Tensor::empty(device, {1, c.heads, c.layout.head_dim}, DType::bf16);
    Tensor after = Tensor::empty(device, {1, c.heads, c.layout.head_dim}, DType::bf16);
    paged_decode_attention(before, query, c.layout, c.layer, cache.table, 0, cache.lens, 37);
    Tensor table = testing_serving::i64_tensor(device, {reinterpret_cast<std::int64_t>(longer.data())}, {1, 1});
    paged_decode_attention(after, query, c.layout, c.layer, table, 40, cache.lens, 37);
    EXPECT_EQ(after.to_host_f32(), before.to_host_f32()) << dtype_name(kv_dtype);
  }
}

// Splits double while sequences x heads x splits stays at kDecodeTargetBlocks or more.
TEST(PagedDecodeHost, SplitsLengthenWhereTheBatchFillsTheGrid) {
  EXPECT_EQ(decode_splits(1, 32, 2048), 8);    // batch 1: 256-token splits
  EXPECT_EQ(decode_splits(4, 4, 300), 2);
  EXPECT_EQ(decode_split_tokens(8, 32, 2048), 512);  // 256 pairs: 4 splits of 512 tokens
  EXPECT_EQ(decode_splits(32, 32, 2176), 1);   // 1024 pairs: the whole context a block
  EXPECT_EQ(decode_splits(64, 32, 100000), 1);
  EXPECT_EQ(decode_workspace_bytes(32, 32, 128, 2176), std::size_t(32 * 32 * 1 * 130 * 4));
}

// Absmax per token and head: each K/V element is off by at most half a step (absmax / 254); the
// attention output stays within a few hundredths of the bf16 cache's on inputs in [-2, 2).
TEST(PagedDecodeHost, Int8CacheWithinItsRounding) {
  Device device(DeviceKind::host, {});
  std::vector<float> reference;
  const auto got = decode_on(device, gqa_case(DType::i8, 16), &reference);
  EXPECT_TRUE(oomlab::testing::all_close(got, reference, {0.05, 0.05}, "int8 cache"));
}

TEST(PagedDecodeHost, SlotBytesCountEveryLayerAndTheInt8Scales) {
  const KvLayout bf16{32, 32, 128, DType::bf16}, int8{32, 32, 128, DType::i8};
  EXPECT_EQ(bf16.slot_bytes(), std::size_t{2} * 32 * 32 * 128 * 2);  // LLaMA-7B: 512 KiB a token
  EXPECT_EQ(int8.slot_bytes(), std::size_t{2} * 32 * 32 * (128 + 4));
  // In a block of 16: layer 1's V of head 3 at slot 5, its run of 16 after the 32 + 32 + 3 before it.
  EXPECT_EQ(bf16.vector_offset(bf16.vector_index(1, 1, 3), 5, 16), ((64 + 32 + 3) * std::size_t{16} + 5) * 256);
  EXPECT_EQ(int8.vector_stride(), std::size_t{132});
  EXPECT_EQ((KvLayout{1, 1, 256, DType::i8}.vector_stride()), std::size_t{264}) << "8-byte lanes stay aligned";
  EXPECT_EQ((KvLayout{1, 1, 16, DType::i8}.vector_stride()), std::size_t{20});
}

TEST(PagedDecodeDry, AllocatesTheSplitPartialsAsHostDoes) {
  for (DeviceKind kind : {DeviceKind::dry, DeviceKind::host}) {
    Device device(kind, {});
    const PagedCase c = gqa_case(DType::bf16, 16);
    auto cache = testing_serving::fill_cache(device, c, 3);
    const std::int64_t n = static_cast<std::int64_t>(c.contexts.size());
    Tensor query = Tensor::zeros(device, {n, c.heads + 2 * c.layout.kv_heads, c.layout.head_dim}, DType::bf16);
    Tensor out = Tensor::empty(device, {n, c.heads, c.layout.head_dim}, DType::bf16);
    const auto before = device.allocator().stats().allocations.total;
    paged_decode_attention(out, query, c.layout, c.layer, cache.table, c.block_tokens, cache.lens, cache.max_context);
    EXPECT_EQ(device.allocator().stats().allocations.total, before + 1) << device_kind_name(kind);
    EXPECT_EQ(decode_workspace_bytes(n, c.heads, c.layout.head_dim, 300), std::size_t(4 * 4 * 2 * 18 * 4));
  }
}

TEST(PagedDecodeHost, RejectsAContextPastItsBlocks) {
  Device device(DeviceKind::host, {});
  const PagedCase c = gqa_case(DType::bf16, 16);
  auto cache = testing_serving::fill_cache(device, c, 3);
  Tensor query = Tensor::zeros(device, {4, 8, 16}, DType::bf16);
  Tensor out = Tensor::empty(device, {4, 4, 16}, DType::bf16);
  EXPECT_THROW(paged_decode_attention(out, query, c.layout, c.layer, cache.table, c.block_tokens, cache.lens, 20 * 16),
               std::invalid_argument);
  Tensor wrong_heads = Tensor::zeros(device, {4, 7, 16}, DType::bf16);  // 3 query heads over 2 KV heads
  EXPECT_THROW(paged_decode_attention(out, wrong_heads, c.layout, c.layer, cache.table, 16, cache.lens, 300),
               std::invalid_argument);
}

TEST(RopeAtPositionsHost, EqualsTrainingRopeAtEachPosition) {
  Device device(DeviceKind::host, {});
  const std::int64_t seq = 9, heads = 3, dim = 8;
  Tensor head_major = oomlab::testing::random_tensor(device, {1, heads, seq, dim}, DType::f32, 5);
  const auto values = head_major.to_host_f32();
  // The same values token-major, plus one head that must stay as it is.
  std::vector<float> token_major(static_cast<std::size_t>(seq * (heads + 1) * dim), 0.5f);
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t t = 0; t < seq; ++t)
      for (std::int64_t d = 0; d < dim; ++d)
        token_major[static_cast<std::size_t>((t * (heads + 1) + h) * dim + d)] =
            values[static_cast<std::size_t>((h * seq + t) * dim + d)];
  Tensor rows = Tensor::from_host(device, {seq, heads + 1, dim}, DType::f32, token_major);
  std::vector<std::int32_t> positions;
  for (std::int32_t t = 0; t < seq; ++t) positions.push_back(t);
  rope_at_positions(rows, heads, testing_serving::i32_tensor(device, positions), 10000.0f);
  rope_forward(head_major, 10000.0f);
  const auto expected = head_major.to_host_f32(), got = rows.to_host_f32();
  for (std::int64_t t = 0; t < seq; ++t) {
    for (std::int64_t d = 0; d < dim; ++d) {
      for (std::int64_t h = 0; h < heads; ++h) {
        EXPECT_FLOAT_EQ(got[static_cast<std::size_t>((t * (heads + 1) + h) * dim + d)],
                        expected[static_cast<std::size_t>((h * seq + t) * dim + d)]);
      }
      EXPECT_EQ(got[static_cast<std::size_t>((t * (heads + 1) + heads) * dim + d)], 0.5f);
    }
  }
}

TEST(GreedyArgmaxHost, FirstMaximumWinsAndPaddingIsIgnored) {
  Device device(DeviceKind::host, {});
  Tensor logits = Tensor::from_host(device, {2, 5}, DType::bf16, {1, 3, 3, 0, 9, -1, -2, -0.5f, -3, 7});
  Tensor tokens = Tensor::empty(device, {2}, DType::i32);
  greedy_argmax(tokens, logits, 4);  // column 4 is padding
  std::vector<std::int32_t> got(2);
  tokens.copy_to_host(got.data(), sizeof(std::int32_t) * 2);
  EXPECT_EQ(got, (std::vector<std::int32_t>{1, 2}));
}

}  // namespace
}  // namespace oomlab::ops
