// The serving kernels on a GPU against the CPU references on the same random data: decode over a
// paged cache (grouped heads, several splits or one, blocks of 1 to 512 tokens or one a sequence,
// bf16/f32/int8 caches), the grown cache's block copy, RoPE at positions, greedy argmax.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "harness/testing/require_gpu.hpp"
#include "kernels/serving/paged_kv.hpp"
#include "kernels/serving/tests/paged_kv_case.hpp"
#include "kernels/testing/compare.hpp"

namespace oomlab::ops {
namespace {

using testing_serving::PagedCase;

struct DecodeCase {
  std::int64_t head_dim, heads, kv_heads, block_tokens;
  DType qkv_dtype, cache_dtype;
};

std::vector<float> decode_on(Device& device, const PagedCase& c) {
  auto cache = testing_serving::fill_cache(device, c, 21);
  const std::int64_t n = static_cast<std::int64_t>(c.contexts.size());
  Tensor query = oomlab::testing::random_tensor(device, {n, c.heads + 2 * c.layout.kv_heads, c.layout.head_dim},
                                                c.qkv_dtype, 77, -2.0f, 2.0f);
  Tensor out = Tensor::empty(device, {n, c.heads, c.layout.head_dim}, c.qkv_dtype);
  paged_decode_attention(out, query, c.layout, c.layer, cache.table, c.block_tokens, cache.lens, cache.max_context);
  return out.to_host_f32();
}

class PagedDecodeGpu : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(PagedDecodeGpu, MatchesTheCpuReference) {
  OOMLAB_REQUIRE_GPU();
  const DecodeCase p = GetParam();
  PagedCase c;
  c.layout = {2, p.kv_heads, p.head_dim, p.cache_dtype};
  c.heads = p.heads;
  c.block_tokens = p.block_tokens;
  c.contexts = {1, 33, 256, 257, 1000};  // one split, a split's edge, four splits
  c.qkv_dtype = p.qkv_dtype;
  Device gpu(DeviceKind::cuda, {}), host(DeviceKind::host, {});
  const auto got = decode_on(gpu, c), expected = decode_on(host, c);
  // f32 accumulation on both sides, in another order: one rounding of the output's dtype.
  EXPECT_TRUE(oomlab::testing::all_close(got, expected, oomlab::testing::tolerance_for(p.qkv_dtype == DType::f32
                                                                                        ? DType::bf16
                                                                                        : p.qkv_dtype)));
}

INSTANTIATE_TEST_SUITE_P(
    Caches, PagedDecodeGpu,
    ::testing::Values(DecodeCase{128, 32, 32, 16, DType::bf16, DType::bf16},   // LLaMA-7B
                      DecodeCase{128, 32, 8, 32, DType::bf16, DType::bf16},    // grouped: 4 queries a KV head
                      DecodeCase{64, 4, 2, 1, DType::bf16, DType::bf16},       // a block a token
                      DecodeCase{64, 4, 4, 512, DType::f32, DType::f32},       // one block holds a sequence
                      DecodeCase{128, 8, 2, 16, DType::bf16, DType::i8},       // int8, dequantised in the kernel
                      DecodeCase{64, 4, 1, 16, DType::f32, DType::i8},
                      // A lane's elements of other head sizes: 1, 3 and 8 of them (8 f32: 32 bytes).
                      DecodeCase{32, 4, 2, 16, DType::bf16, DType::bf16},
                      DecodeCase{96, 6, 3, 16, DType::bf16, DType::bf16},
                      DecodeCase{256, 4, 2, 16, DType::f32, DType::f32},
                      DecodeCase{256, 4, 2, 16, DType::bf16, DType::i8}));

// A wide batch: 40 sequences x 32 heads fill the grid, so a split is the whole context (up to
// 700 tokens, splits of 1024); and caches grown by concatenation (one block a sequence, its
// context long: block_tokens 0), bf16 and int8.
TEST(PagedDecodeGpu, AWideBatchAndCachesOneBlockLong) {
  OOMLAB_REQUIRE_GPU();
  PagedCase wide;
  wide.layout = {2, 32, 64, DType::bf16};
  wide.heads = 32;
  wide.block_tokens = 16;
  for (std::int64_t s = 0; s < 40; ++s) wide.contexts.push_back(1 + (s * 97) % 700);
  ASSERT_EQ(decode_splits(40, 32, 700), 1);
  PagedCase grown = wide, grown_int8 = wide;
  grown.block_tokens = grown_int8.block_tokens = 0;
  grown.contexts = grown_int8.contexts = {1, 33, 300, 1000};
  grown_int8.layout.dtype = DType::i8;
  for (const PagedCase* c : {&wide, &grown, &grown_int8}) {
    Device gpu(DeviceKind::cuda, {}), host(DeviceKind::host, {});
    EXPECT_TRUE(oomlab::testing::all_close(decode_on(gpu, *c), decode_on(host, *c),
                                           oomlab::testing::tolerance_for(DType::bf16),
                                           "block_tokens " + std::to_string(c->block_tokens)));
  }
}

// The grown cache's move into a longer block (a 2-D copy on the GPU) puts every byte where the
// host's does.
TEST(KvCopyBlockGpu, MovesEveryRunAsTheHostDoes) {
  OOMLAB_REQUIRE_GPU();
  const KvLayout layout{3, 2, 32, DType::i8};
  std::vector<std::vector<float>> results;
  Device gpu(DeviceKind::cuda, {}), host(DeviceKind::host, {});
  for (Device* device : {&gpu, &host}) {
    const auto bytes = [&](std::int64_t tokens) { return static_cast<std::int64_t>(layout.slot_bytes()) * tokens; };
    Tensor from = oomlab::testing::random_tensor(*device, {bytes(13)}, DType::i8, 3, -100.0f, 100.0f);
    Tensor to = Tensor::zeros(*device, {bytes(20)}, DType::i8);
    kv_copy_block(to, 20, from, 13, layout);
    results.push_back(to.to_host_f32());
  }
  EXPECT_EQ(results[0], results[1]);
}

TEST(RopeAtPositionsGpu, MatchesTheCpuReference) {
  OOMLAB_REQUIRE_GPU();
  Device gpu(DeviceKind::cuda, {}), host(DeviceKind::host, {});
  const std::vector<std::int32_t> positions{0, 5, 4095, 17, 300};
  std::vector<std::vector<float>> results;
  for (Device* device : {&gpu, &host}) {
    Tensor x = oomlab::testing::random_tensor(*device, {5, 6, 128}, DType::bf16, 9);
    rope_at_positions(x, 4, testing_serving::i32_tensor(*device, positions), 10000.0f);
    results.push_back(x.to_host_f32());
  }
  EXPECT_TRUE(oomlab::testing::all_close(results[0], results[1], oomlab::testing::tolerance_for(DType::bf16)));
}

TEST(GreedyArgmaxGpu, MatchesTheCpuReferenceWithTies) {
  OOMLAB_REQUIRE_GPU();
  Device gpu(DeviceKind::cuda, {}), host(DeviceKind::host, {});
  const std::int64_t rows = 7, vocab = 32000, columns = 32000;
  auto values = oomlab::testing::random_values(static_cast<std::size_t>(rows * columns), 4, -8.0f, 8.0f);
  for (std::int64_t r = 0; r < rows; ++r) {  // ties: the same maximum at two places, the first must win
    values[static_cast<std::size_t>(r * columns + 100 + r)] = 20.0f;
    values[static_cast<std::size_t>(r * columns + 31000 - r)] = 20.0f;
  }
  std::vector<std::vector<std::int32_t>> results;
  for (Device* device : {&gpu, &host}) {
    Tensor logits = Tensor::from_host(*device, {rows, columns}, DType::bf16, values);
    Tensor tokens = Tensor::empty(*device, {rows}, DType::i32);
    greedy_argmax(tokens, logits, vocab);
    std::vector<std::int32_t> got(static_cast<std::size_t>(rows));
    tokens.copy_to_host(got.data(), got.size() * sizeof(std::int32_t));
    results.push_back(got);
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[1][3], 103);
}

}  // namespace
}  // namespace oomlab::ops
