// The head layout permutes on host: hand-checked positions, round trip, dtype casts, bad shapes.
#include <gtest/gtest.h>

#include "kernels/core/host_values.hpp"
#include "kernels/testing/random_fill.hpp"
#include "scenarios/models/transformer/head_layout.hpp"
#include "scenarios/models/transformer/tests/test_support.hpp"

namespace oomlab::model {
namespace {

constexpr std::int64_t B = 2, T = 3, H = 2, D = 4, C = H * D;

TEST(HeadLayout, SplitsQkvIntoHeadsAtTheRightPositions) {
  Device device(DeviceKind::host, testing::unlimited_config());
  const std::vector<float> values = oomlab::testing::random_values(B * T * 3 * C, 1);
  Tensor qkv = Tensor::from_host(device, {B, T, 3 * C}, DType::f32, values);
  Tensor q = Tensor::empty(device, {B, H, T, D}, DType::f32);
  Tensor k = Tensor::empty(device, {B, H, T, D}, DType::f32);
  Tensor v = Tensor::empty(device, {B, H, T, D}, DType::f32);
  heads_from_tokens({&q, &k, &v}, qkv);
  const std::vector<float> qv = q.to_host_f32(), kv = k.to_host_f32(), vv = v.to_host_f32();
  // b=1, t=2, head 1, d=3: token-major offset (b*T + t)*3C + s*C + h*D + d.
  const std::size_t head_index = ((1 * H + 1) * T + 2) * D + 3;
  const std::size_t token_base = (1 * T + 2) * 3 * C + 1 * D + 3;
  EXPECT_EQ(qv[head_index], values[token_base]);
  EXPECT_EQ(kv[head_index], values[token_base + C]);
  EXPECT_EQ(vv[head_index], values[token_base + 2 * C]);
}

// Grouped-query attention: q takes H heads of the row, k and v Hkv each after it.
TEST(HeadLayout, SplitsAGroupedQueryProjectionIntoHAndHkvHeads) {
  constexpr std::int64_t Hq = 4, Hkv = 2, row = (Hq + 2 * Hkv) * D;
  Device device(DeviceKind::host, testing::unlimited_config());
  const std::vector<float> values = oomlab::testing::random_values(B * T * row, 3);
  Tensor qkv = Tensor::from_host(device, {B, T, row}, DType::f32, values);
  Tensor q = Tensor::empty(device, {B, Hq, T, D}, DType::f32);
  Tensor k = Tensor::empty(device, {B, Hkv, T, D}, DType::f32);
  Tensor v = Tensor::empty(device, {B, Hkv, T, D}, DType::f32);
  heads_from_tokens({&q, &k, &v}, qkv);
  const std::vector<float> qv = q.to_host_f32(), kv = k.to_host_f32(), vv = v.to_host_f32();
  // b=1, t=2, d=3: q head 3, k and v head 1.
  const std::size_t token_base = (1 * T + 2) * row + 3;
  EXPECT_EQ(qv[((1 * Hq + 3) * T + 2) * D + 3], values[token_base + 3 * D]);
  EXPECT_EQ(kv[((1 * Hkv + 1) * T + 2) * D + 3], values[token_base + (Hq + 1) * D]);
  EXPECT_EQ(vv[((1 * Hkv + 1) * T + 2) * D + 3], values[token_base + (Hq + Hkv + 1) * D]);
  // And back: the merge puts every value where it came from.
  Tensor back = Tensor::zeros(device, {B, T, row}, DType::f32);
  tokens_from_heads(back, {&q, &k, &v});
  EXPECT_EQ(back.to_host_f32(), values);
  // A row that is not H*D + 2*Hkv*D wide is refused.
  Tensor narrow = Tensor::zeros(device, {B, T, row - D}, DType::f32);
  EXPECT_THROW(heads_from_tokens({&q, &k, &v}, narrow), std::invalid_argument);
}

TEST(HeadLayout, MergeInvertsSplitAndCastsOnTheWay) {
  Device device(DeviceKind::host, testing::unlimited_config());
  const std::vector<float> values = oomlab::testing::random_values(B * T * C, 2);
  Tensor tokens = Tensor::from_host(device, {B, T, C}, DType::f32, values);
  Tensor heads = Tensor::empty(device, {B, H, T, D}, DType::bf16);
  heads_from_tokens({&heads}, tokens);
  Tensor back = Tensor::empty(device, {B, T, C}, DType::f32);
  tokens_from_heads(back, {&heads});
  const std::vector<float> round_trip = back.to_host_f32();
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(round_trip[i], round_to_dtype(values[i], DType::bf16)) << i;
  }
}

TEST(HeadLayout, BadShapesThrow) {
  Device device(DeviceKind::host, testing::unlimited_config());
  Tensor tokens = Tensor::zeros(device, {B, T, 3 * C}, DType::f32);
  Tensor q = Tensor::empty(device, {B, H, T, D}, DType::f32);
  Tensor wrong = Tensor::empty(device, {B, H, T, D + 1}, DType::f32);
  EXPECT_THROW(heads_from_tokens({&q}, tokens), std::invalid_argument);  // 3C needs 3 tensors
  EXPECT_THROW(heads_from_tokens({&q, &q, &wrong}, tokens), std::invalid_argument);
  EXPECT_THROW(heads_from_tokens({}, tokens), std::invalid_argument);
  Tensor ints = Tensor::zeros(device, {B, T, C}, DType::i32);
  EXPECT_THROW(tokens_from_heads(ints, {&q}), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::model
