// Reductions and the L1 loss on host: hand-computed values, bf16 inputs, the L1 backward against
// finite differences, dry, and bad-argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/conv/l1_loss.hpp"
#include "kernels/conv/reduce.hpp"
#include "kernels/testing/compare.hpp"
#include "kernels/testing/finite_difference.hpp"
#include "kernels/testing/random_fill.hpp"

namespace oomlab::ops {
namespace {

struct HostReduce : ::testing::Test {
  Device host{DeviceKind::host, {}};
  float scalar(const Tensor& t) { return t.to_host_f32().at(0); }
};

TEST_F(HostReduce, SumMeanAndChannelMean) {
  Tensor x = Tensor::from_host(host, {2, 1, 1, 3}, DType::bf16, {1, 2, 3, 4, 5, 6});
  Tensor out = Tensor::empty(host, {1}, DType::f32);
  sum(x, out);
  EXPECT_EQ(scalar(out), 21.0f);
  mean(x, out);
  EXPECT_EQ(scalar(out), 3.5f);
  Tensor per_channel = Tensor::empty(host, {3}, DType::f32);
  channel_mean(x, per_channel);
  EXPECT_EQ(per_channel.to_host_f32(), (std::vector<float>{2.5f, 3.5f, 4.5f}));
}

TEST_F(HostReduce, L1LossValueAndGradients) {
  Tensor a = Tensor::from_host(host, {4}, DType::f32, {1, 2, 3, 4});
  Tensor b = Tensor::from_host(host, {4}, DType::f32, {2, 2, 1, 5});
  Tensor loss = Tensor::empty(host, {}, DType::f32);
  l1_loss_forward(a, b, loss);
  EXPECT_EQ(scalar(loss), (1 + 0 + 2 + 1) / 4.0f);
  Tensor da = Tensor::empty(host, {4}, DType::f32);
  Tensor db = Tensor::empty(host, {4}, DType::f32);
  l1_loss_backward(a, b, 2.0f, da, db);
  EXPECT_EQ(da.to_host_f32(), (std::vector<float>{-0.5f, 0, 0.5f, -0.5f}));
  EXPECT_EQ(db.to_host_f32(), (std::vector<float>{0.5f, 0, -0.5f, 0.5f}));
}

TEST_F(HostReduce, L1BackwardMatchesFiniteDifferences) {
  const Shape shape{3, 5, 7};
  Tensor a = testing::random_tensor(host, shape, DType::f32, 1);
  // b = a + an offset of magnitude >= 0.1, so no |a - b| kink is within the step.
  std::vector<float> offsets = testing::random_values(105, 2);
  std::vector<float> a_values = a.to_host_f32(), b_values(105);
  for (std::size_t i = 0; i < 105; ++i) {
    b_values[i] = a_values[i] + std::copysign(0.1f + std::fabs(offsets[i]), offsets[i]);
  }
  Tensor b = Tensor::from_host(host, shape, DType::f32, b_values);
  Tensor loss = Tensor::empty(host, {1}, DType::f32);
  const float weight = 1.5f;
  auto total = [&] {
    l1_loss_forward(a, b, loss);
    return double(weight) * scalar(loss);
  };
  Tensor da = Tensor::empty(host, shape, DType::f32);
  Tensor db = Tensor::empty(host, shape, DType::f32);
  l1_loss_backward(a, b, weight, da, db);
  const testing::Tolerance tol{1e-4, 1e-3};
  EXPECT_TRUE(testing::all_close(da.to_host_f32(), testing::finite_difference_gradient(a, total, 1e-2f), tol, "da"));
  EXPECT_TRUE(testing::all_close(db.to_host_f32(), testing::finite_difference_gradient(b, total, 1e-2f), tol, "db"));
}

TEST_F(HostReduce, BadOutputsThrow) {
  Tensor x = Tensor::zeros(host, {2, 3}, DType::f32);
  Tensor two = Tensor::empty(host, {2}, DType::f32);
  Tensor bf16_scalar = Tensor::empty(host, {1}, DType::bf16);
  EXPECT_THROW(sum(x, two), std::invalid_argument);
  EXPECT_THROW(mean(x, bf16_scalar), std::invalid_argument);
  Tensor wrong_channels = Tensor::empty(host, {2}, DType::f32);
  EXPECT_THROW(channel_mean(x, wrong_channels), std::invalid_argument);
  Tensor y = Tensor::zeros(host, {3, 2}, DType::f32);
  Tensor loss = Tensor::empty(host, {1}, DType::f32);
  EXPECT_THROW(l1_loss_forward(x, y, loss), std::invalid_argument);
}

TEST(DryReduce, ChecksShapesWithoutComputing) {
  Device dry(DeviceKind::dry, {});
  Tensor x = Tensor::empty(dry, {4, 64, 64, 8}, DType::bf16);
  Tensor out = Tensor::empty(dry, {1}, DType::f32);
  EXPECT_NO_THROW(sum(x, out));
  EXPECT_NO_THROW(l1_loss_forward(x, x, out));
  Tensor channels = Tensor::empty(dry, {8}, DType::f32);
  EXPECT_NO_THROW(channel_mean(x, channels));
  Tensor wrong = Tensor::empty(dry, {7}, DType::f32);
  EXPECT_THROW(channel_mean(x, wrong), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::ops
