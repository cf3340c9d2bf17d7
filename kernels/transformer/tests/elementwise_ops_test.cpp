// Element-wise ops on host: GELU and SwiGLU backward against finite differences, known values
// for residual, casts, int8 quantisation and loss scaling, and shape checks on dry.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/core/host_values.hpp"
#include "kernels/testing/finite_difference.hpp"
#include "kernels/testing/random_fill.hpp"
#include "kernels/transformer/cast.hpp"
#include "kernels/transformer/gelu.hpp"
#include "kernels/transformer/init_normal.hpp"
#include "kernels/transformer/loss_scale.hpp"
#include "kernels/transformer/quantize.hpp"
#include "kernels/core/residual.hpp"
#include "kernels/transformer/swiglu.hpp"
#include "kernels/transformer/tests/test_support.hpp"

namespace oomlab::ops {
namespace {

using testing::all_close;
using testing::finite_difference_gradient;
using testing::host_device;
using testing::dry_device;
using testing::kFiniteDifferenceTolerance;
using testing::probe_loss;
using testing::random_tensor;
using testing::random_values;

TEST(Gelu, KnownValues) {
  Tensor x = Tensor::from_host(host_device(), {4}, DType::f32, {0.0f, 1.0f, -1.0f, 3.0f});
  Tensor out = Tensor::empty(host_device(), {4}, DType::f32);
  gelu_forward(out, x);
  // PyTorch: F.gelu(x, approximate="tanh")
  EXPECT_TRUE(all_close(out.to_host_f32(), {0.0f, 0.841192f, -0.158808f, 2.996363f}, {1e-5, 1e-5}));
}

TEST(Gelu, BackwardMatchesFiniteDifferences) {
  for (Shape shape : {Shape{3, 7}, Shape{5, 33}}) {
    Tensor x = random_tensor(host_device(), shape, DType::f32, 11, -3.0f, 3.0f);
    Tensor out = Tensor::empty(host_device(), shape, DType::f32);
    std::vector<float> probe = random_values(static_cast<std::size_t>(x.numel()), 12);
    Tensor dout = Tensor::from_host(host_device(), shape, DType::f32, probe);
    Tensor dx = Tensor::empty(host_device(), shape, DType::f32);
    gelu_backward(dx, dout, x);
    auto numeric = finite_difference_gradient(x, [&] {
      gelu_forward(out, x);
      return probe_loss(out, probe);
    });
    EXPECT_TRUE(all_close(dx.to_host_f32(), numeric, kFiniteDifferenceTolerance, "gelu dx"));
  }
}

TEST(Swiglu, KnownValueAndBackwardMatchesFiniteDifferences) {
  Tensor g1 = Tensor::from_host(host_device(), {1}, DType::f32, {2.0f});
  Tensor u1 = Tensor::from_host(host_device(), {1}, DType::f32, {3.0f});
  Tensor o1 = Tensor::empty(host_device(), {1}, DType::f32);
  swiglu_forward(o1, g1, u1);
  EXPECT_NEAR(o1.to_host_f32()[0], 3.0f * 2.0f / (1.0f + std::exp(-2.0f)), 1e-6);

  Shape shape{5, 33};
  Tensor gate = random_tensor(host_device(), shape, DType::f32, 21, -3.0f, 3.0f);
  Tensor up = random_tensor(host_device(), shape, DType::f32, 22, -2.0f, 2.0f);
  Tensor out = Tensor::empty(host_device(), shape, DType::f32);
  std::vector<float> probe = random_values(static_cast<std::size_t>(gate.numel()), 23);
  Tensor dout = Tensor::from_host(host_device(), shape, DType::f32, probe);
  Tensor dgate = Tensor::empty(host_device(), shape, DType::f32);
  Tensor dup = Tensor::empty(host_device(), shape, DType::f32);
  swiglu_backward(dgate, dup, dout, gate, up);
  auto loss = [&] {
    swiglu_forward(out, gate, up);
    return probe_loss(out, probe);
  };
  EXPECT_TRUE(all_close(dgate.to_host_f32(), finite_difference_gradient(gate, loss),
                        kFiniteDifferenceTolerance, "dgate"));
  EXPECT_TRUE(all_close(dup.to_host_f32(), finite_difference_gradient(up, loss),
                        kFiniteDifferenceTolerance, "dup"));
}

TEST(FillNormal, SeededStandardNormalScaled) {
  Tensor a = Tensor::empty(host_device(), {200000}, DType::f32);
  Tensor b = Tensor::empty(host_device(), {200000}, DType::f32);
  fill_normal(a, 5, 0.02f);
  fill_normal(b, 5, 0.02f);
  EXPECT_EQ(a.to_host_f32(), b.to_host_f32());  // a function of (seed, index) only
  const std::vector<float> values = a.to_host_f32();
  double sum = 0, squares = 0, beyond_3_sigma = 0;
  for (float v : values) {
    sum += v;
    squares += double(v) * v;
    beyond_3_sigma += std::abs(v) > 0.06f;
  }
  const double n = double(values.size());
  EXPECT_NEAR(sum / n, 0.0, 3 * 0.02 / std::sqrt(n) * 2);
  EXPECT_NEAR(std::sqrt(squares / n), 0.02, 0.02 * 0.01);
  EXPECT_NEAR(beyond_3_sigma / n, 0.0027, 0.0006);  // a normal's tails, not a uniform's
  fill_normal(b, 6, 0.02f);
  EXPECT_NE(a.to_host_f32(), b.to_host_f32());
  Tensor low = Tensor::empty(host_device(), {1000}, DType::bf16);
  fill_normal(low, 5, 0.02f);  // rounded once from the same draws
  const std::vector<float> rounded = low.to_host_f32();
  for (std::size_t i = 0; i < rounded.size(); ++i) EXPECT_EQ(rounded[i], round_to_dtype(values[i], DType::bf16));
}

TEST(Residual, AddsAndMayAliasAnInput) {
  Tensor a = Tensor::from_host(host_device(), {3}, DType::bf16, {1.0f, -2.0f, 0.5f});
  Tensor b = Tensor::from_host(host_device(), {3}, DType::bf16, {0.25f, 4.0f, -0.5f});
  residual_add(a, a, b);
  EXPECT_EQ(a.to_host_f32(), (std::vector<float>{1.25f, 2.0f, 0.0f}));
}

TEST(Cast, RoundsToNearestEvenAndRoundTrips) {
  std::vector<float> values = random_values(37, 31, -100.0f, 100.0f);
  Tensor f32 = Tensor::from_host(host_device(), {37}, DType::f32, values);
  for (DType low : {DType::bf16, DType::f16}) {
    Tensor narrow = Tensor::empty(host_device(), {37}, low);
    cast(narrow, f32);
    std::vector<float> got = narrow.to_host_f32();
    for (std::size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(got[i], round_to_dtype(values[i], low)) << dtype_name(low) << " " << values[i];
    }
    Tensor back = Tensor::empty(host_device(), {37}, DType::f32);
    cast(back, narrow);
    EXPECT_EQ(back.to_host_f32(), got);
  }
  Tensor ints = Tensor::empty(host_device(), {37}, DType::i32);
  EXPECT_THROW(cast(ints, f32), std::invalid_argument);
}

TEST(Quantize, PerRowAbsmaxKnownCase) {
  Tensor x = Tensor::from_host(host_device(), {3, 4}, DType::f32,
                               {1.0f, -2.0f, 0.5f, 0.0f,     //
                                0.0f, 0.0f, 0.0f, 0.0f,      //
                                127.0f, 63.5f, -0.6f, 1.5f});
  Tensor q = Tensor::empty(host_device(), {3, 4}, DType::i8);
  Tensor scales = Tensor::empty(host_device(), {3}, DType::f32);
  quantize_int8_rowwise(q, scales, x);
  EXPECT_TRUE(all_close(scales.to_host_f32(), {2.0f / 127.0f, 0.0f, 1.0f}, {0, 1e-7}));
  // 63.5 ties to even 64 (not 63.5 -> 63); -0.6 -> -1; 1.5 -> 2.
  EXPECT_EQ(q.to_host_f32(), (std::vector<float>{64, -127, 32, 0, 0, 0, 0, 0, 127, 64, -1, 2}));
  Tensor restored = Tensor::empty(host_device(), {3, 4}, DType::f32);
  dequantize_int8_rowwise(restored, q, scales);
  std::vector<float> got = restored.to_host_f32();
  EXPECT_NEAR(got[1], -2.0f, 1e-6);
  EXPECT_EQ(got[8], 127.0f);
  EXPECT_EQ(got[5], 0.0f);
}

TEST(Quantize, RoundTripErrorIsAtMostHalfAStep) {
  Tensor x = random_tensor(host_device(), {5, 33}, DType::f32, 41, -3.0f, 3.0f);
  Tensor q = Tensor::empty(host_device(), {5, 33}, DType::i8);
  Tensor scales = Tensor::empty(host_device(), {5}, DType::f32);
  quantize_int8_rowwise(q, scales, x);
  Tensor restored = Tensor::empty(host_device(), {5, 33}, DType::f32);
  dequantize_int8_rowwise(restored, q, scales);
  std::vector<float> in = x.to_host_f32(), out = restored.to_host_f32(), s = scales.to_host_f32();
  for (std::size_t i = 0; i < in.size(); ++i) EXPECT_LE(std::fabs(in[i] - out[i]), 0.5f * s[i / 33] * 1.0001f);
}

TEST(LossScale, UnscaleFlagsInfAndNan) {
  Tensor g1 = Tensor::from_host(host_device(), {3}, DType::f16, {1024.0f, -512.0f, 2.0f});
  Tensor g2 = Tensor::from_host(host_device(), {2}, DType::f32, {8.0f, 4.0f});
  Tensor found_inf = Tensor::empty(host_device(), {1}, DType::f32);
  unscale_and_check({g1, g2}, 1.0f / 512.0f, found_inf);
  EXPECT_FALSE(read_found_inf(found_inf));
  EXPECT_EQ(g1.to_host_f32(), (std::vector<float>{2.0f, -1.0f, 1.0f / 256.0f}));
  EXPECT_EQ(g2.to_host_f32(), (std::vector<float>{1.0f / 64.0f, 1.0f / 128.0f}));

  g2.fill(std::numeric_limits<double>::infinity());
  unscale_and_check({g1, g2}, 0.5f, found_inf);
  EXPECT_TRUE(read_found_inf(found_inf));
  g2.fill(std::nan(""));
  unscale_and_check({g2}, 0.5f, found_inf);
  EXPECT_TRUE(read_found_inf(found_inf));
  g2.fill(1.0);
  unscale_and_check({g2}, 0.5f, found_inf);
  EXPECT_FALSE(read_found_inf(found_inf)) << "the flag is reset on every call";

  scale(g2, 3.0f);
  EXPECT_EQ(g2.to_host_f32(), (std::vector<float>{1.5f, 1.5f}));
}

TEST(LossScale, DryReadsTheInjectedFlag) {
  Tensor found_inf = Tensor::empty(dry_device(), {1}, DType::f32);
  Tensor grad = Tensor::empty(dry_device(), {1000}, DType::f16);
  unscale_and_check({grad}, 0.5f, found_inf);
  EXPECT_FALSE(read_found_inf(found_inf));
  EXPECT_TRUE(read_found_inf(found_inf, /*dry_value=*/true));
  Tensor wrong = Tensor::empty(dry_device(), {2}, DType::f32);
  EXPECT_THROW(unscale_and_check({grad}, 0.5f, wrong), std::invalid_argument);
}

TEST(GradScaler, HalvesOnOverflowAndGrowsAfterCleanSteps) {
  GradScaler scaler;
  scaler.scale = 1024.0f;
  scaler.growth_interval = 3;
  EXPECT_FALSE(scaler.update(true));
  EXPECT_EQ(scaler.scale, 512.0f);
  EXPECT_TRUE(scaler.update(false));
  EXPECT_TRUE(scaler.update(false));
  EXPECT_EQ(scaler.scale, 512.0f);
  EXPECT_TRUE(scaler.update(false));
  EXPECT_EQ(scaler.scale, 1024.0f) << "grows after growth_interval clean steps";
  EXPECT_TRUE(scaler.update(false));
  EXPECT_FALSE(scaler.update(true));
  EXPECT_EQ(scaler.scale, 512.0f);
  EXPECT_EQ(scaler.clean_steps, 0) << "an overflow restarts the clean-step count";
}

TEST(ElementwiseDry, ShapeChecksThrowAndValidCallsDoNothing) {
  Tensor x = Tensor::empty(dry_device(), {4, 8}, DType::bf16);
  Tensor out = Tensor::empty(dry_device(), {4, 8}, DType::bf16);
  Tensor wrong_shape = Tensor::empty(dry_device(), {4, 9}, DType::bf16);
  Tensor wrong_dtype = Tensor::empty(dry_device(), {4, 8}, DType::f32);
  EXPECT_NO_THROW(gelu_forward(out, x));
  EXPECT_NO_THROW(residual_add(out, x, x));
  EXPECT_NO_THROW(cast(wrong_dtype, x));
  EXPECT_THROW(gelu_forward(wrong_shape, x), std::invalid_argument);
  EXPECT_THROW(gelu_forward(wrong_dtype, x), std::invalid_argument);
  EXPECT_THROW(gelu_backward(out, wrong_shape, x), std::invalid_argument);
  EXPECT_THROW(residual_add(out, x, wrong_shape), std::invalid_argument);
  EXPECT_THROW(swiglu_forward(out, x, wrong_dtype), std::invalid_argument);
  EXPECT_THROW(cast(wrong_shape, x), std::invalid_argument);
  Tensor q = Tensor::empty(dry_device(), {4, 8}, DType::i8);
  Tensor scales = Tensor::empty(dry_device(), {3}, DType::f32);
  EXPECT_THROW(quantize_int8_rowwise(q, scales, x), std::invalid_argument);
  Tensor on_host = Tensor::empty(host_device(), {4, 8}, DType::bf16);
  EXPECT_THROW(gelu_forward(on_host, x), std::invalid_argument) << "devices differ";
}

}  // namespace
}  // namespace oomlab::ops
