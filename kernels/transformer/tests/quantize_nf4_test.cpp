// NF4's CPU reference: the code book and its thresholds (bitsandbytes'), the nibble order, the
// double-quantised absmax against its definition, the round-trip error on Gaussian weights, the
// storage sizes against bitsandbytes' formula, refusals, and dry's allocations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/transformer/quantize_nf4.hpp"
#include "kernels/transformer/quantize_nf4_math.hpp"
#include "kernels/transformer/tests/test_support.hpp"

namespace oomlab::ops {
namespace {

using testing::dry_device;
using testing::host_device;

// Weights as a model has them: N(0, sigma) with sigma varying from row to row (so block absmax
// values spread and the second level has something to quantise).
std::vector<float> gaussian_weights(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> sigma(0.005f, 0.05f);
  std::vector<float> values(static_cast<std::size_t>(n));
  float row_sigma = sigma(rng);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i % 512 == 0) row_sigma = sigma(rng);
    values[i] = row_sigma * normal(rng);
  }
  return values;
}

struct Quantized {
  Tensor codes, absmax_q, absmax_scale;
};

Quantized quantize(const Tensor& x) {
  const Nf4Shapes shapes = nf4_shapes(x.numel());
  Device& device = x.device();
  Quantized q{Tensor::empty(device, shapes.codes, DType::i8), Tensor::empty(device, shapes.absmax_q, DType::i8),
              Tensor::empty(device, shapes.absmax_scale, DType::f32)};
  quantize_nf4(q.codes, q.absmax_q, q.absmax_scale, x);
  return q;
}

std::vector<std::uint8_t> bytes_of(const Tensor& t) {
  const auto* data = t.data_as<const std::uint8_t>();
  return std::vector<std::uint8_t>(data, data + t.numel());
}

std::vector<float> signed_map() {
  std::vector<float> map(kDynamicMapSize);
  for (int i = 0; i < kDynamicMapSize; ++i) map[static_cast<std::size_t>(i)] = dynamic_map_value(true, i);
  return map;
}

TEST(Nf4CodeBook, SixteenSortedValuesFromMinusOneToOneWithAnExactZero) {
  EXPECT_EQ(nf4_value(0), -1.0f);
  EXPECT_EQ(nf4_value(7), 0.0f);
  EXPECT_EQ(nf4_value(15), 1.0f);
  EXPECT_EQ(nf4_value(1), -0.6961928009986877f);
  EXPECT_EQ(nf4_value(8), 0.07958029955625534f);
  for (int c = 1; c < kNf4Codes; ++c) EXPECT_LT(nf4_value(c - 1), nf4_value(c)) << c;
  for (int c = 0; c < kNf4Codes; ++c) EXPECT_EQ(nf4_quantize(nf4_value(c)), c) << c;
}

TEST(Nf4CodeBook, EachValueTakesTheNearestCode) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int trial = 0; trial < 100000; ++trial) {
    const float x = dist(rng);
    const int code = nf4_quantize(x);
    for (int other = 0; other < kNf4Codes; ++other) {
      // Slack: bitsandbytes' thresholds are the midpoints rounded to f32.
      ASSERT_LE(std::fabs(x - nf4_value(code)), std::fabs(x - nf4_value(other)) + 1e-7f)
          << "x " << x << " took code " << code << ", nearer is " << other;
    }
  }
  EXPECT_EQ(nf4_quantize(-5.0f), 0);
  EXPECT_EQ(nf4_quantize(5.0f), 15);
  EXPECT_EQ(nf4_quantize(std::nanf("")), 0);  // as bitsandbytes' tree: every comparison false
}

// bitsandbytes' rule is `x > threshold`: a value exactly on one takes the lower code.
TEST(Nf4CodeBook, AValueOnAThresholdTakesTheLowerCode) {
  const struct {
    float threshold;
    int lower;
  } cases[] = {{0.03979014977812767f, 7}, {-0.045525018125772476f, 6}, {0.8614784181118011f, 14},
               {-0.8480964004993439f, 0}};
  for (const auto& c : cases) {
    EXPECT_EQ(nf4_quantize(c.threshold), c.lower) << c.threshold;
    EXPECT_EQ(nf4_quantize(std::nextafter(c.threshold, 2.0f)), c.lower + 1) << c.threshold;
  }
}

// Known values: the first of each pair in the high nibble; the block dequantises exactly (one
// block: offset = its absmax, second-level scale 0, the absmax comes back exactly).
TEST(Nf4Quantize, FirstValueOfAPairGoesInTheHighNibble) {
  std::vector<float> values(64, 0.0f);
  values[0] = 2.0f;                         // code 15
  values[1] = -2.0f;                        // code 0
  values[3] = 2.0f * 0.5626170039176941f;   // code 13 (values[2] = 0: code 7)
  values[63] = 2.0f * -0.09105003625154495f;  // code 6 (values[62] = 0: code 7)
  Tensor x = Tensor::from_host(host_device(), {2, 32}, DType::f32, values);
  Quantized q = quantize(x);
  const std::vector<std::uint8_t> codes = bytes_of(q.codes);
  EXPECT_EQ(codes[0], 0xF0);
  EXPECT_EQ(codes[1], 0x7D);
  EXPECT_EQ(codes[2], 0x77);
  EXPECT_EQ(codes[31], 0x76);
  EXPECT_EQ(q.absmax_scale.to_host_f32(), (std::vector<float>{0.0f, 2.0f}));  // scale, then offset
  Tensor restored = Tensor::empty(host_device(), {64}, DType::f32);
  dequantize_nf4(restored, q.codes, q.absmax_q, q.absmax_scale);
  EXPECT_EQ(restored.to_host_f32(), values);
}

TEST(Nf4Quantize, AZeroBlockComesBackAsZeros) {
  std::vector<float> values = gaussian_weights(256, 5);
  for (std::size_t i = 64; i < 128; ++i) values[i] = 0.0f;
  Tensor x = Tensor::from_host(host_device(), {256}, DType::f32, values);
  Quantized q = quantize(x);
  const std::vector<std::uint8_t> codes = bytes_of(q.codes);
  for (std::size_t i = 32; i < 64; ++i) EXPECT_EQ(codes[i], 0x77) << i;
  Tensor restored = Tensor::empty(host_device(), {256}, DType::f32);
  dequantize_nf4(restored, q.codes, q.absmax_q, q.absmax_scale);
  const std::vector<float> out = restored.to_host_f32();
  for (std::size_t i = 64; i < 128; ++i) EXPECT_EQ(out[i], 0.0f) << i;
}

// 300 blocks: two second-level groups, the second partial (44 blocks).
TEST(Nf4Quantize, DoubleQuantisedAbsmaxFollowsItsDefinition) {
  const std::int64_t n = 64 * 300;
  const std::vector<float> values = gaussian_weights(n, 7);
  Tensor x = Tensor::from_host(host_device(), {n}, DType::f32, values);
  Quantized q = quantize(x);
  ASSERT_EQ(q.absmax_scale.numel(), 3);
  std::vector<float> absmax(300, 0.0f);
  double sum = 0.0;
  for (std::size_t i = 0; i < values.size(); ++i) absmax[i / 64] = std::fmax(absmax[i / 64], std::fabs(values[i]));
  for (float a : absmax) sum += a;
  const std::vector<float> scales = q.absmax_scale.to_host_f32();
  const float offset = scales[2];
  EXPECT_NEAR(offset, sum / 300.0, 1e-6 * offset);  // summed per group, then over groups
  const std::vector<float> map = signed_map();
  const std::vector<std::uint8_t> codes2 = bytes_of(q.absmax_q);
  for (std::size_t b = 0; b < absmax.size(); ++b) {
    const std::size_t g = b / 256;
    float scale = 0.0f;
    for (std::size_t o = g * 256; o < std::min<std::size_t>(300, (g + 1) * 256); ++o) {
      scale = std::fmax(scale, std::fabs(absmax[o] - offset));
    }
    ASSERT_EQ(scales[g], scale) << "group " << g;
    // The nearest map entry to (absmax - offset) / scale: within half the widest gap (1/64 near
    // +-1), and no other entry nearer.
    const float normalised = (absmax[b] - offset) / scale;
    const float chosen = map[codes2[b]];
    for (float other : map) ASSERT_LE(std::fabs(normalised - chosen), std::fabs(normalised - other) + 1e-6f) << b;
    EXPECT_LE(std::fabs(nf4_absmax(map.data(), codes2[b], scale, offset) - absmax[b]), scale / 128.0f) << b;
  }
}

// Each value: the nearest code for value / (its block's absmax), and out = code value * the
// block's absmax as rebuilt from the second level, exactly; the error within half the widest
// NF4 gap of the block's absmax plus the absmax' own error.
TEST(Nf4Quantize, RoundTripOnGaussianWeights) {
  const std::int64_t n = 64 * 700;
  const std::vector<float> values = gaussian_weights(n, 11);
  Tensor x = Tensor::from_host(host_device(), {7, n / 7}, DType::f32, values);
  Quantized q = quantize(x);
  Tensor restored = Tensor::empty(host_device(), {n}, DType::f32);
  dequantize_nf4(restored, q.codes, q.absmax_q, q.absmax_scale);
  const std::vector<float> out = restored.to_host_f32(), scales = q.absmax_scale.to_host_f32();
  const std::vector<std::uint8_t> codes = bytes_of(q.codes), codes2 = bytes_of(q.absmax_q);
  const std::vector<float> map = signed_map();
  float widest_gap = 0.0f;  // -1 to -0.696 (the table is not symmetric)
  for (int c = 1; c < kNf4Codes; ++c) widest_gap = std::fmax(widest_gap, nf4_value(c) - nf4_value(c - 1));
  double error_squares = 0.0, value_squares = 0.0;
  for (std::int64_t b = 0; b < n / 64; ++b) {
    float absmax = 0.0f;
    for (std::int64_t i = b * 64; i < (b + 1) * 64; ++i) absmax = std::fmax(absmax, std::fabs(values[i]));
    const float rebuilt = nf4_absmax(map.data(), codes2[b], scales[b / 256], scales.back());
    for (std::int64_t i = b * 64; i < (b + 1) * 64; ++i) {
      const int code = i % 2 == 0 ? nf4_first(codes[i / 2]) : nf4_second(codes[i / 2]);
      const float normalised = values[i] * (1.0f / absmax);
      for (int other = 0; other < kNf4Codes; ++other) {
        ASSERT_LE(std::fabs(normalised - nf4_value(code)), std::fabs(normalised - nf4_value(other)) + 1e-7f) << i;
      }
      ASSERT_EQ(out[i], nf4_value(code) * rebuilt) << i;
      EXPECT_LE(std::fabs(out[i] - values[i]), 0.5f * widest_gap * absmax + std::fabs(rebuilt - absmax) + 1e-7f) << i;
      error_squares += double(out[i] - values[i]) * (out[i] - values[i]);
      value_squares += double(values[i]) * values[i];
    }
  }
  // NF4 on Gaussian blocks of 64: under a tenth of the values' RMS (0.092 with this seed).
  EXPECT_LT(std::sqrt(error_squares / value_squares), 0.1);
}

// bf16 in, bf16 out: the f32 result rounded once.
TEST(Nf4Quantize, Bf16InAndOut) {
  const std::int64_t n = 64 * 40;
  Tensor x = Tensor::from_host(host_device(), {n}, DType::bf16, gaussian_weights(n, 13));
  Tensor x32 = Tensor::from_host(host_device(), {n}, DType::f32, x.to_host_f32());
  Quantized q = quantize(x), q32 = quantize(x32);
  EXPECT_EQ(bytes_of(q.codes), bytes_of(q32.codes));
  EXPECT_EQ(bytes_of(q.absmax_q), bytes_of(q32.absmax_q));
  Tensor out = Tensor::empty(host_device(), {n}, DType::bf16), out32 = Tensor::empty(host_device(), {n}, DType::f32);
  dequantize_nf4(out, q.codes, q.absmax_q, q.absmax_scale);
  dequantize_nf4(out32, q.codes, q.absmax_q, q.absmax_scale);
  Tensor rounded = Tensor::from_host(host_device(), {n}, DType::bf16, out32.to_host_f32());
  EXPECT_EQ(out.to_host_f32(), rounded.to_host_f32());
}

// bitsandbytes' sizes: packed weight n/2, nested absmax n/64 bytes, state2.absmax 4 bytes per
// 256 blocks, the offset 4 bytes.
TEST(Nf4Storage, BytesMatchBitsandbytes) {
  const std::int64_t n = 4096LL * 14336;  // Llama-3-8B's MLP projection
  const Nf4Shapes shapes = nf4_shapes(n);
  EXPECT_EQ(shapes.codes, (Shape{n / 2}));
  EXPECT_EQ(shapes.absmax_q, (Shape{n / 64}));
  EXPECT_EQ(shapes.absmax_scale, (Shape{n / 64 / 256 + 1}));
  EXPECT_EQ(nf4_storage_bytes(n), std::size_t(n / 2 + n / 64 + 4 * (n / 16384) + 4));
  EXPECT_EQ(nf4_storage_bytes(64), std::size_t(32 + 1 + 4 + 4));             // one partial group
  EXPECT_EQ(nf4_storage_bytes(64 * 257), std::size_t(32 * 257 + 257 + 8 + 4));  // two groups
  EXPECT_EQ(nf4_quantize_workspace_bytes(64 * 257), std::size_t(257 * 4 + 2 * 8));
}

TEST(Nf4Storage, ValueCountsThatAreNotWholeBlocksAreRefused) {
  for (std::int64_t n : {0, 1, 63, 65, 100, 4095}) {
    EXPECT_THROW(nf4_shapes(n), std::invalid_argument) << n;
    EXPECT_THROW(nf4_storage_bytes(n), std::invalid_argument) << n;
  }
  Tensor x = Tensor::zeros(host_device(), {100}, DType::f32);
  Tensor codes = Tensor::zeros(host_device(), {50}, DType::i8), absmax_q = Tensor::zeros(host_device(), {1}, DType::i8);
  Tensor absmax_scale = Tensor::zeros(host_device(), {2}, DType::f32);
  EXPECT_THROW(quantize_nf4(codes, absmax_q, absmax_scale, x), std::invalid_argument);
}

TEST(Nf4Checks, BadArgumentsThrowOnEveryDevice) {
  for (Device* device : {&host_device(), &dry_device()}) {
    const Nf4Shapes shapes = nf4_shapes(128);
    Tensor x = Tensor::zeros(*device, {128}, DType::f32);
    Tensor codes = Tensor::zeros(*device, shapes.codes, DType::i8);
    Tensor absmax_q = Tensor::zeros(*device, shapes.absmax_q, DType::i8);
    Tensor absmax_scale = Tensor::zeros(*device, shapes.absmax_scale, DType::f32);
    EXPECT_NO_THROW(quantize_nf4(codes, absmax_q, absmax_scale, x));
    Tensor codes_2d = Tensor::zeros(*device, {2, 32}, DType::i8);  // a (2, 64) weight's (out, in / 2)
    EXPECT_NO_THROW(quantize_nf4(codes_2d, absmax_q, absmax_scale, x));
    Tensor short_codes = Tensor::zeros(*device, {63}, DType::i8),
           f32_codes = Tensor::zeros(*device, shapes.codes, DType::f32);
    EXPECT_THROW(quantize_nf4(short_codes, absmax_q, absmax_scale, x), std::invalid_argument);
    EXPECT_THROW(quantize_nf4(f32_codes, absmax_q, absmax_scale, x), std::invalid_argument);
    Tensor no_offset = Tensor::zeros(*device, {1}, DType::f32);  // the scale without the offset
    EXPECT_THROW(quantize_nf4(codes, absmax_q, no_offset, x), std::invalid_argument);
    Tensor ints = Tensor::zeros(*device, {128}, DType::i32);
    EXPECT_THROW(quantize_nf4(codes, absmax_q, absmax_scale, ints), std::invalid_argument);
    Tensor out_too_long = Tensor::zeros(*device, {192}, DType::bf16);
    EXPECT_THROW(dequantize_nf4(out_too_long, codes, absmax_q, absmax_scale), std::invalid_argument);
  }
}

// quantize allocates its workspace on dry as on host and frees it; dequantize allocates nothing.
TEST(Nf4Dry, QuantizeAllocatesItsWorkspaceOnEveryDevice) {
  const std::int64_t n = 64 * 1000;
  std::int64_t peaks[2] = {0, 0};
  int index = 0;
  for (DeviceKind kind : {DeviceKind::dry, DeviceKind::host}) {
    Device device(kind, {});
    Tensor x = kind == DeviceKind::host ? Tensor::from_host(device, {n}, DType::bf16, gaussian_weights(n, 17))
                                        : Tensor::empty(device, {n}, DType::bf16);
    const Nf4Shapes shapes = nf4_shapes(n);
    Tensor codes = Tensor::empty(device, shapes.codes, DType::i8),
           absmax_q = Tensor::empty(device, shapes.absmax_q, DType::i8);
    Tensor absmax_scale = Tensor::empty(device, shapes.absmax_scale, DType::f32);
    Tensor out = Tensor::empty(device, {n}, DType::bf16);
    const auto before = device.allocator().stats().allocated.current;
    device.allocator().reset_peak_stats();
    quantize_nf4(codes, absmax_q, absmax_scale, x);
    auto stats = device.allocator().stats();
    EXPECT_EQ(stats.allocated.current, before) << device_kind_name(kind);
    EXPECT_GE(stats.allocated.peak - before, std::int64_t(nf4_quantize_workspace_bytes(n))) << device_kind_name(kind);
    peaks[index++] = stats.allocated.peak - before;
    device.allocator().reset_peak_stats();
    dequantize_nf4(out, codes, absmax_q, absmax_scale);
    EXPECT_EQ(device.allocator().stats().allocated.peak, before) << device_kind_name(kind);
  }
  EXPECT_EQ(peaks[0], peaks[1]);
}

}  // namespace
}  // namespace oomlab::ops
