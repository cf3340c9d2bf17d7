// 8-bit AdamW's CPU reference: the dynamic map's shape and resolution, and an optimizer that
// follows f32 AdamW closely over many steps (three blocks, the last one partial).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/testing/random_fill.hpp"
#include "kernels/transformer/adamw8bit.hpp"
#include "kernels/transformer/tests/test_support.hpp"

namespace oomlab::ops {
namespace {

using testing::host_device;

std::vector<float> map_values(bool is_signed) {
  std::vector<float> map(kDynamicMapSize);
  for (int i = 0; i < kDynamicMapSize; ++i) map[static_cast<std::size_t>(i)] = dynamic_map_value(is_signed, i);
  return map;
}

TEST(Adam8Bit, TheMapsAreSortedAndSpanTheirRanges) {
  for (bool is_signed : {true, false}) {
    const std::vector<float> map = map_values(is_signed);
    for (std::size_t i = 1; i < map.size(); ++i) ASSERT_LT(map[i - 1], map[i]) << is_signed << " at " << i;
    EXPECT_EQ(map.back(), 1.0f);
    EXPECT_EQ(map[is_signed ? 127 : 0], 0.0f);
    // The smallest positive entry: seven decades below the absmax.
    const float smallest = map[is_signed ? 128 : 1];
    EXPECT_GT(smallest, 1e-7f);
    EXPECT_LT(smallest, 1e-6f);
  }
  const std::vector<float> m = map_values(true);
  for (int i = 0; i < 127; ++i) EXPECT_EQ(m[static_cast<std::size_t>(i)], -m[static_cast<std::size_t>(254 - i)]);
}

TEST(Adam8Bit, QuantisationErrorIsHalfAGapAtEveryScale) {
  const std::vector<float> map = map_values(true);
  const std::vector<float> values = testing::random_values(20000, 41, -1.0f, 1.0f);
  for (float x : values) {
    const float back = map[dynamic_quantize(map.data(), x)];
    EXPECT_LE(std::fabs(back - x), 0.9f / 64 / 2 + 1e-6f) << x;  // the top decade's half gap
  }
  // Small moments keep their size: within 12% down to 1e-5 of the absmax (4 levels a decade there),
  // and not rounded to zero down to 1e-6 (where a linear byte would have lost all below 4e-3).
  for (float x : {3e-1f, 2e-2f, 5e-3f, 7e-4f, 4e-5f}) {
    const float back = map[dynamic_quantize(map.data(), x)];
    EXPECT_NEAR(back, x, 0.12f * x) << x;
  }
  for (float x : {2e-6f, -3e-6f}) {
    const float back = map[dynamic_quantize(map.data(), x)];
    EXPECT_GT(back / x, 0.5f) << x;
    EXPECT_LT(back / x, 2.0f) << x;
  }
}

TEST(Adam8Bit, FollowsF32AdamWOverManySteps) {
  const std::int64_t n = 2 * kAdam8BitBlock + 700;  // two full blocks and a partial one
  const std::vector<float> start = testing::random_values(static_cast<std::size_t>(n), 42, -1.0f, 1.0f);
  Tensor w32 = Tensor::from_host(host_device(), {n}, DType::f32, start);
  Tensor w8 = Tensor::from_host(host_device(), {n}, DType::f32, start);
  Tensor m = Tensor::zeros(host_device(), {n}, DType::f32), v = Tensor::zeros(host_device(), {n}, DType::f32);
  Tensor mc = Tensor::zeros(host_device(), {n}, DType::i8), vc = Tensor::zeros(host_device(), {n}, DType::i8);
  Tensor ma = Tensor::zeros(host_device(), {adam8bit_blocks(n)}, DType::f32);
  Tensor va = Tensor::zeros(host_device(), {adam8bit_blocks(n)}, DType::f32);
  Tensor none;
  const AdamWConfig config{1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f};
  for (int step = 1; step <= 100; ++step) {
    // Gradients of a noisy quadratic, with a spread of scales inside each block.
    std::vector<float> g = testing::random_values(static_cast<std::size_t>(n), 1000 + step, -0.1f, 0.1f);
    const std::vector<float> at = w32.to_host_f32();
    for (std::size_t i = 0; i < g.size(); ++i) g[i] += at[i] * (i % 7 == 0 ? 1e-3f : 1.0f);
    const Tensor grad = Tensor::from_host(host_device(), {n}, DType::f32, g);
    adamw_step(w32, none, grad, m, v, config, step);
    adamw8bit_step(w8, none, grad, mc, ma, vc, va, config, step);
  }
  const std::vector<float> a = w32.to_host_f32(), b = w8.to_host_f32();
  double moved = 0, apart = 0, moved_sum = 0, apart_sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    moved = std::max(moved, std::fabs(double(a[i]) - start[i]));
    apart = std::max(apart, std::fabs(double(a[i]) - b[i]));
    moved_sum += std::fabs(double(a[i]) - start[i]);
    apart_sum += std::fabs(double(a[i]) - b[i]);
  }
  // 100 steps of lr 1e-3 move a weight up to 0.1. The 8-bit run's weights stay within 2% of the
  // f32 run's movement on average and 15% at worst (a moment far below its block's absmax).
  EXPECT_GT(moved, 0.05);
  EXPECT_LT(apart_sum, 0.02 * moved_sum) << "mean: f32 moved " << moved_sum / a.size() << ", 8-bit differs by "
                                         << apart_sum / a.size();
  EXPECT_LT(apart, 0.15 * moved) << "f32 moved " << moved << ", 8-bit differs by " << apart;
  // The state it holds is the f32 run's moments, to the map's resolution.
  Tensor m8 = Tensor::empty(host_device(), {n}, DType::f32);
  dequantize_moments(m8, mc, ma, true);
  const std::vector<float> m32 = m.to_host_f32(), m8v = m8.to_host_f32();
  const float m_max =
      *std::max_element(m32.begin(), m32.end(), [](float x, float y) { return std::fabs(x) < std::fabs(y); });
  for (std::size_t i = 0; i < m32.size(); i += 97) EXPECT_NEAR(m8v[i], m32[i], 0.05 * std::fabs(m_max)) << i;
}

TEST(Adam8Bit, MisShapedStateIsRefusedAndDryDoesNothing) {
  const std::int64_t n = 3000;
  Tensor w = Tensor::zeros(host_device(), {n}, DType::f32), g = Tensor::zeros(host_device(), {n}, DType::f32);
  Tensor codes = Tensor::zeros(host_device(), {n}, DType::i8), absmax = Tensor::zeros(host_device(), {2}, DType::f32);
  Tensor short_absmax = Tensor::zeros(host_device(), {1}, DType::f32),
         f32_codes = Tensor::zeros(host_device(), {n}, DType::f32);
  Tensor none;
  EXPECT_NO_THROW(adamw8bit_step(w, none, g, codes, absmax, codes, absmax, {}, 1));
  EXPECT_THROW(adamw8bit_step(w, none, g, codes, short_absmax, codes, absmax, {}, 1), std::invalid_argument);
  EXPECT_THROW(adamw8bit_step(w, none, g, f32_codes, absmax, codes, absmax, {}, 1), std::invalid_argument);
  EXPECT_THROW(adamw8bit_step(w, none, g, codes, absmax, codes, absmax, {}, 0), std::invalid_argument);
  Device& dry = testing::dry_device();
  Tensor dw = Tensor::empty(dry, {n}, DType::f32), dg = Tensor::empty(dry, {n}, DType::bf16);
  Tensor dc = Tensor::empty(dry, {n}, DType::i8), da = Tensor::empty(dry, {2}, DType::f32);
  EXPECT_NO_THROW(adamw8bit_step(dw, none, dg, dc, da, dc, da, {}, 1));
}

}  // namespace
}  // namespace oomlab::ops
