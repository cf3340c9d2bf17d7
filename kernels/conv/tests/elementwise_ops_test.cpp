// LeakyReLU, softplus and pixel shuffle on host: hand-computed values, stability at large |x|,
// every backward against central finite differences, and bad-argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/conv/leaky_relu.hpp"
#include "kernels/conv/pixel_shuffle.hpp"
#include "kernels/conv/softplus.hpp"
#include "kernels/testing/compare.hpp"
#include "kernels/testing/finite_difference.hpp"
#include "kernels/testing/random_fill.hpp"

namespace oomlab::ops {
namespace {

// Random values with |v| in [0.1, 1]: finite differences never straddle a kink at 0.
std::vector<float> away_from_zero(std::size_t n, std::uint32_t seed) {
  std::vector<float> values = testing::random_values(n, seed);
  for (float& v : values) v = std::copysign(0.1f + 0.9f * std::fabs(v), v);
  return values;
}

struct HostOps : ::testing::Test {
  Device host{DeviceKind::host, {}};
};

TEST_F(HostOps, LeakyReluForwardValues) {
  Tensor x = Tensor::from_host(host, {4}, DType::f32, {-2, -0.5f, 0.5f, 3});
  Tensor y = Tensor::empty(host, {4}, DType::f32);
  leaky_relu_forward(x, y, 0.2f);
  EXPECT_EQ(y.to_host_f32(), (std::vector<float>{-0.4f, -0.1f, 0.5f, 3}));
  relu_forward(x, y);
  EXPECT_EQ(y.to_host_f32(), (std::vector<float>{0, 0, 0.5f, 3}));
}

TEST_F(HostOps, LeakyReluBackwardMatchesFiniteDifferences) {
  for (float slope : {0.0f, 0.2f}) {
    const Shape shape{2, 3, 5, 3};
    Tensor x = Tensor::from_host(host, shape, DType::f32, away_from_zero(90, 1));
    Tensor y = Tensor::empty(host, shape, DType::f32);
    const std::vector<float> probe = testing::random_values(90, 2);
    auto loss = [&] {
      leaky_relu_forward(x, y, slope);
      return testing::probe_loss(y, probe);
    };
    Tensor dy = Tensor::from_host(host, shape, DType::f32, probe);
    Tensor dx = Tensor::empty(host, shape, DType::f32);
    leaky_relu_backward(x, dy, dx, slope);
    EXPECT_TRUE(testing::all_close(dx.to_host_f32(), testing::finite_difference_gradient(x, loss),
                                   {1e-3, 1e-3}, "leaky_relu dx"))
        << "slope " << slope;
    // The forward output gives the same gradient (same sign as x for slope >= 0).
    leaky_relu_forward(x, y, slope);
    Tensor dx_from_y = Tensor::empty(host, shape, DType::f32);
    leaky_relu_backward(y, dy, dx_from_y, slope);
    EXPECT_EQ(dx_from_y.to_host_f32(), dx.to_host_f32());
  }
}

TEST_F(HostOps, SoftplusIsStableAtLargeMagnitudes) {
  Tensor x = Tensor::from_host(host, {5}, DType::f32, {-100, -20, 0, 20, 100});
  Tensor y = Tensor::empty(host, {5}, DType::f32);
  softplus_forward(x, y);
  std::vector<float> v = y.to_host_f32();
  for (float value : v) EXPECT_TRUE(std::isfinite(value));
  EXPECT_NEAR(v[0], 0.0f, 1e-30f);
  EXPECT_NEAR(v[1], std::exp(-20.0f), 1e-12f);
  EXPECT_NEAR(v[2], std::log(2.0f), 1e-7f);
  EXPECT_FLOAT_EQ(v[3], 20.0f);
  EXPECT_FLOAT_EQ(v[4], 100.0f);
  Tensor dx = Tensor::empty(host, {5}, DType::f32);
  softplus_backward(x, Tensor::from_host(host, {5}, DType::f32, {1, 1, 1, 1, 1}), dx);
  std::vector<float> g = dx.to_host_f32();
  EXPECT_FLOAT_EQ(g[2], 0.5f);
  EXPECT_FLOAT_EQ(g[4], 1.0f);
  EXPECT_GE(g[0], 0.0f);
  EXPECT_LT(g[0], 1e-30f);
}

TEST_F(HostOps, SoftplusBackwardMatchesFiniteDifferences) {
  const Shape shape{3, 7, 5};
  Tensor x = testing::random_tensor(host, shape, DType::f32, 3, -6.0f, 6.0f);
  Tensor y = Tensor::empty(host, shape, DType::f32);
  const std::vector<float> probe = testing::random_values(105, 4);
  auto loss = [&] {
    softplus_forward(x, y);
    return testing::probe_loss(y, probe);
  };
  Tensor dx = Tensor::empty(host, shape, DType::f32);
  softplus_backward(x, Tensor::from_host(host, shape, DType::f32, probe), dx);
  EXPECT_TRUE(testing::all_close(dx.to_host_f32(), testing::finite_difference_gradient(x, loss, 1e-2f),
                                 {2e-3, 2e-3}, "softplus dx"));
}

TEST_F(HostOps, PixelShuffleUsesPyTorchChannelOrder) {
  // x (1, 1, 1, 8) -> y (1, 2, 2, 2): y[i, j, c] = x[c*4 + i*2 + j].
  Tensor x = Tensor::from_host(host, {1, 1, 1, 8}, DType::f32, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor y = Tensor::empty(host, {1, 2, 2, 2}, DType::f32);
  pixel_shuffle_forward(x, y, 2);
  EXPECT_EQ(y.to_host_f32(), (std::vector<float>{0, 4, 1, 5, 2, 6, 3, 7}));
  Tensor back = Tensor::empty(host, {1, 1, 1, 8}, DType::f32);
  pixel_shuffle_backward(y, back, 2);
  EXPECT_EQ(back.to_host_f32(), x.to_host_f32());
}

TEST_F(HostOps, PixelShuffleBackwardMatchesFiniteDifferences) {
  for (int factor : {2, 3}) {
    const Shape x_shape{2, 3, 5, 2 * factor * factor};
    const Shape y_shape = pixel_shuffle_output_shape(x_shape, factor);
    Tensor x = testing::random_tensor(host, x_shape, DType::f32, 5);
    Tensor y = Tensor::empty(host, y_shape, DType::f32);
    const std::vector<float> probe = testing::random_values(shape_numel(y_shape), 6);
    auto loss = [&] {
      pixel_shuffle_forward(x, y, factor);
      return testing::probe_loss(y, probe);
    };
    Tensor dx = Tensor::empty(host, x_shape, DType::f32);
    pixel_shuffle_backward(Tensor::from_host(host, y_shape, DType::f32, probe), dx, factor);
    EXPECT_TRUE(testing::all_close(dx.to_host_f32(), testing::finite_difference_gradient(x, loss, 0.25f),
                                   {1e-5, 1e-5}, "pixel_shuffle dx"))
        << "factor " << factor;
  }
}

TEST_F(HostOps, BadArgumentsThrow) {
  Tensor x = Tensor::zeros(host, {2, 3}, DType::f32);
  Tensor other_shape = Tensor::empty(host, {3, 2}, DType::f32);
  Tensor other_dtype = Tensor::empty(host, {2, 3}, DType::bf16);
  EXPECT_THROW(leaky_relu_forward(x, other_shape, 0.2f), std::invalid_argument);
  EXPECT_THROW(softplus_forward(x, other_dtype), std::invalid_argument);
  EXPECT_THROW(softplus_backward(x, x, Tensor()), std::invalid_argument);
  Tensor images = Tensor::zeros(host, {1, 2, 2, 6}, DType::f32);  // 6 is not a multiple of 4
  EXPECT_THROW(pixel_shuffle_output_shape(images.shape(), 2), std::invalid_argument);
  Tensor low = Tensor::zeros(host, {1, 2, 2, 8}, DType::f32);
  Tensor high_wrong = Tensor::empty(host, {1, 4, 4, 1}, DType::f32);
  EXPECT_THROW(pixel_shuffle_forward(low, high_wrong, 2), std::invalid_argument);
  Device dry(DeviceKind::dry, {});
  Tensor dry_x = Tensor::empty(dry, {1, 2, 2, 8}, DType::bf16);
  Tensor dry_y = Tensor::empty(dry, {1, 4, 4, 2}, DType::bf16);
  EXPECT_NO_THROW(pixel_shuffle_forward(dry_x, dry_y, 2));
  EXPECT_THROW(pixel_shuffle_forward(dry_x, x, 2), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::ops
