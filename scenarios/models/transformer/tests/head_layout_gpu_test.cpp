// The head layout permutes on cuda against the host reference, both directions, exactly (a
// permute only moves and rounds values): the 16-byte run path (head_dim a multiple of the run,
// aligned pointers, same or mixed dtypes) and the element path (odd head_dim, unaligned views);
// grouped-query splits (k and v with fewer heads than q) on both paths.
#include <gtest/gtest.h>

#include <vector>

#include "harness/testing/require_gpu.hpp"
#include "kernels/testing/random_fill.hpp"
#include "scenarios/models/transformer/head_layout.hpp"
#include "scenarios/models/transformer/tests/test_support.hpp"

namespace oomlab::model {
namespace {

struct PermuteCase {
  const char* name;
  DType tokens_dtype, heads_dtype;
  std::int64_t batch, seq, heads, head_dim, count;
  std::int64_t tokens_offset, heads_offset;  // elements; a non-zero offset breaks 16-byte alignment
  std::int64_t kv_heads = 0;  // heads of the 2nd and 3rd tensors (k, v); 0: `heads`
  // Heads of head tensor s: q has `heads`, k and v `kv_heads`.
  std::int64_t heads_of(std::int64_t s) const { return s == 0 || kv_heads == 0 ? heads : kv_heads; }
};

// A (shape) tensor `offset` elements into a fresh buffer filled with seeded values.
Tensor offset_tensor(Device& device, const Shape& shape, DType dtype, std::int64_t offset,
                     std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  const std::int64_t n = shape_numel(shape);
  Tensor flat = Tensor::from_host(device, {n + offset}, dtype,
                                  oomlab::testing::random_values(static_cast<std::size_t>(n + offset), seed, lo, hi));
  return flat.slice(offset, n + offset).view(shape);
}

// Runs heads_from_tokens then tokens_from_heads (on fresh random heads) on one device; returns
// the gathered heads followed by the scattered tokens, as f32.
std::vector<std::vector<float>> run_both_directions(DeviceKind kind, const PermuteCase& c) {
  Device device(kind, testing::unlimited_config());
  std::int64_t row_heads = 0;
  for (std::int64_t s = 0; s < c.count; ++s) row_heads += c.heads_of(s);
  const Shape token_shape{c.batch, c.seq, row_heads * c.head_dim};
  Tensor tokens = offset_tensor(device, token_shape, c.tokens_dtype, c.tokens_offset, 11);
  std::vector<Tensor> gathered, sources;
  std::vector<Tensor*> gathered_ptrs;
  std::vector<const Tensor*> source_ptrs;
  for (std::int64_t s = 0; s < c.count; ++s) {
    const auto seed = static_cast<std::uint32_t>(s);
    const Shape head_shape{c.batch, c.heads_of(s), c.seq, c.head_dim};
    // Outputs start as garbage, so a skipped element cannot pass.
    gathered.push_back(offset_tensor(device, head_shape, c.heads_dtype, c.heads_offset, 100 + seed, 50.0f, 60.0f));
    sources.push_back(offset_tensor(device, head_shape, c.heads_dtype, c.heads_offset, 200 + seed));
  }
  for (std::int64_t s = 0; s < c.count; ++s) {
    gathered_ptrs.push_back(&gathered[static_cast<std::size_t>(s)]);
    source_ptrs.push_back(&sources[static_cast<std::size_t>(s)]);
  }
  heads_from_tokens(gathered_ptrs, tokens);
  Tensor scattered = offset_tensor(device, token_shape, c.tokens_dtype, c.tokens_offset, 300, 50.0f, 60.0f);
  tokens_from_heads(scattered, source_ptrs);
  std::vector<std::vector<float>> results;
  for (const Tensor& g : gathered) results.push_back(g.to_host_f32());
  results.push_back(scattered.to_host_f32());
  return results;
}

class HeadLayoutGpu : public ::testing::TestWithParam<PermuteCase> {};

TEST_P(HeadLayoutGpu, MatchesTheHostReferenceExactly) {
  OOMLAB_REQUIRE_GPU();
  const PermuteCase& c = GetParam();
  const auto expected = run_both_directions(DeviceKind::host, c);
  const auto actual = run_both_directions(DeviceKind::cuda, c);
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t t = 0; t < expected.size(); ++t) {
    ASSERT_EQ(actual[t].size(), expected[t].size());
    for (std::size_t i = 0; i < expected[t].size(); ++i) {
      ASSERT_EQ(actual[t][i], expected[t][i]) << c.name << " tensor " << t << " [" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, HeadLayoutGpu,
    ::testing::Values(
        // The GPT-2 shape in small: 8-element bf16 runs, qkv split.
        PermuteCase{"bf16_qkv_runs", DType::bf16, DType::bf16, 2, 17, 3, 64, 3, 0, 0},
        // Mixed dtypes: 4-element runs (16 bytes of f32, 8 of bf16).
        PermuteCase{"f32_tokens_bf16_heads", DType::f32, DType::bf16, 2, 9, 2, 16, 3, 0, 0},
        PermuteCase{"f16_single_head_tensor", DType::f16, DType::f16, 3, 5, 4, 8, 1, 0, 0},
        // Element path: head_dim not a multiple of the run, then unaligned tokens / heads.
        PermuteCase{"odd_head_dim", DType::bf16, DType::bf16, 2, 7, 3, 5, 3, 0, 0},
        PermuteCase{"unaligned_tokens", DType::bf16, DType::bf16, 2, 7, 2, 64, 3, 1, 0},
        PermuteCase{"unaligned_heads", DType::bf16, DType::f32, 2, 7, 2, 64, 2, 0, 1},
        // Grouped-query attention: q with 8 heads, k and v with 2 (Llama 3's ratio, 4 to 1).
        PermuteCase{"gqa_qkv_runs", DType::bf16, DType::bf16, 2, 13, 8, 64, 3, 0, 0, 2},
        PermuteCase{"gqa_mixed_dtypes", DType::f32, DType::bf16, 2, 9, 6, 16, 3, 0, 0, 3},
        PermuteCase{"gqa_element_path", DType::bf16, DType::bf16, 2, 7, 4, 5, 3, 0, 0, 1},
        PermuteCase{"gqa_unaligned_tokens", DType::bf16, DType::bf16, 2, 7, 4, 64, 3, 1, 0, 2}),
    [](const ::testing::TestParamInfo<PermuteCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace oomlab::model
