// The element-wise, pixel-shuffle, loss and reduction kernels against their CPU references on
// seeded random data, f32 / bf16 / f16, sizes including odd ones and vector tails.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "harness/testing/require_gpu.hpp"
#include "kernels/conv/l1_loss.hpp"
#include "kernels/conv/leaky_relu.hpp"
#include "kernels/conv/pixel_shuffle.hpp"
#include "kernels/conv/reduce.hpp"
#include "kernels/conv/softplus.hpp"
#include "kernels/conv/tests/gpu_test_support.hpp"
#include "kernels/testing/compare.hpp"
#include "kernels/testing/random_fill.hpp"

namespace oomlab::ops {
namespace {

const std::vector<Shape> kShapes = {{1}, {3, 5, 7}, {2, 17, 13, 8}, {1, 1000, 1003}};
const std::vector<DType> kDtypes = {DType::f32, DType::bf16, DType::f16};

struct GpuOps : ::testing::Test {
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no usable CUDA device";
    cuda_ = std::make_unique<Device>(DeviceKind::cuda, memory::AllocatorConfig{});
  }
  Device host{DeviceKind::host, {}};
  std::unique_ptr<Device> cuda_;
  Device& cuda() { return *cuda_; }
  // Elementwise results: one rounding of the output, plus f32 libm differences (expf, log1pf).
  testing::Tolerance elementwise(DType dtype) {
    testing::Tolerance tol = testing::tolerance_for(dtype);
    if (dtype == DType::f32) tol = {1e-6, 1e-5};
    return tol;
  }
};

TEST_F(GpuOps, LeakyReluForwardAndBackward) {
  for (DType dtype : kDtypes)
    for (const Shape& shape : kShapes)
      for (float slope : {0.0f, 0.2f}) {
        const std::string what = testing::describe_case("leaky_relu", shape, dtype, "slope " + std::to_string(slope));
        Tensor x = testing::random_tensor(host, shape, dtype, 1);
        Tensor dy = testing::random_tensor(host, shape, dtype, 2);
        Tensor y_ref = Tensor::empty(host, shape, dtype), dx_ref = Tensor::empty(host, shape, dtype);
        leaky_relu_forward(x, y_ref, slope);
        leaky_relu_backward(x, dy, dx_ref, slope);
        Tensor gx = testing::copy_to(cuda(), x), gdy = testing::copy_to(cuda(), dy);
        Tensor gy = Tensor::empty(cuda(), shape, dtype), gdx = Tensor::empty(cuda(), shape, dtype);
        leaky_relu_forward(gx, gy, slope);
        leaky_relu_backward(gx, gdy, gdx, slope);
        EXPECT_TRUE(testing::all_close(gy.to_host_f32(), y_ref.to_host_f32(), elementwise(dtype), what + " y"));
        EXPECT_TRUE(testing::all_close(gdx.to_host_f32(), dx_ref.to_host_f32(), elementwise(dtype), what + " dx"));
      }
}

TEST_F(GpuOps, SoftplusForwardAndBackward) {
  for (DType dtype : kDtypes)
    for (const Shape& shape : kShapes) {
      const std::string what = testing::describe_case("softplus", shape, dtype);
      Tensor x = testing::random_tensor(host, shape, dtype, 3, -30.0f, 30.0f);
      Tensor dy = testing::random_tensor(host, shape, dtype, 4);
      Tensor y_ref = Tensor::empty(host, shape, dtype), dx_ref = Tensor::empty(host, shape, dtype);
      softplus_forward(x, y_ref);
      softplus_backward(x, dy, dx_ref);
      Tensor gx = testing::copy_to(cuda(), x), gdy = testing::copy_to(cuda(), dy);
      Tensor gy = Tensor::empty(cuda(), shape, dtype), gdx = Tensor::empty(cuda(), shape, dtype);
      softplus_forward(gx, gy);
      softplus_backward(gx, gdy, gdx);
      EXPECT_TRUE(testing::all_close(gy.to_host_f32(), y_ref.to_host_f32(), elementwise(dtype), what + " y"));
      EXPECT_TRUE(testing::all_close(gdx.to_host_f32(), dx_ref.to_host_f32(), elementwise(dtype), what + " dx"));
    }
}

TEST_F(GpuOps, PixelShuffleIsTheExactPermutation) {
  // 16-byte packs of low-side channels where they divide (4 f32 / 8 bf16; factor 2 and 3), else
  // elements: 18 channels, and 4 and 36 for 16-bit types.
  const std::vector<std::pair<Shape, int>> cases = {
      {{2, 5, 3, 4}, 2},   {{1, 17, 13, 8}, 2}, {{4, 8, 8, 256}, 2},
      {{1, 3, 5, 18}, 3},  {{2, 3, 4, 36}, 3},  {{1, 6, 7, 72}, 3}};
  for (DType dtype : kDtypes)
    for (const auto& [x_shape, factor] : cases) {
      const std::string what =
          testing::describe_case("pixel_shuffle", x_shape, dtype, "factor " + std::to_string(factor));
      const Shape y_shape = pixel_shuffle_output_shape(x_shape, factor);
      Tensor x = testing::random_tensor(host, x_shape, dtype, 5);
      Tensor dy = testing::random_tensor(host, y_shape, dtype, 6);
      Tensor y_ref = Tensor::empty(host, y_shape, dtype), dx_ref = Tensor::empty(host, x_shape, dtype);
      pixel_shuffle_forward(x, y_ref, factor);
      pixel_shuffle_backward(dy, dx_ref, factor);
      Tensor gx = testing::copy_to(cuda(), x), gdy = testing::copy_to(cuda(), dy);
      Tensor gy = Tensor::empty(cuda(), y_shape, dtype), gdx = Tensor::empty(cuda(), x_shape, dtype);
      pixel_shuffle_forward(gx, gy, factor);
      pixel_shuffle_backward(gdy, gdx, factor);
      EXPECT_EQ(gy.to_host_f32(), y_ref.to_host_f32()) << what << " forward";
      EXPECT_EQ(gdx.to_host_f32(), dx_ref.to_host_f32()) << what << " backward";
    }
}

TEST_F(GpuOps, L1LossForwardAndBackward) {
  for (DType dtype : kDtypes)
    for (const Shape& shape : kShapes) {
      const std::string what = testing::describe_case("l1_loss", shape, dtype);
      Tensor a = testing::random_tensor(host, shape, dtype, 7);
      Tensor b = testing::random_tensor(host, shape, dtype, 8);
      Tensor loss_ref = Tensor::empty(host, {1}, DType::f32);
      Tensor da_ref = Tensor::empty(host, shape, dtype), db_ref = Tensor::empty(host, shape, dtype);
      l1_loss_forward(a, b, loss_ref);
      l1_loss_backward(a, b, 0.75f, da_ref, db_ref);
      Tensor ga = testing::copy_to(cuda(), a), gb = testing::copy_to(cuda(), b);
      Tensor loss = Tensor::empty(cuda(), {1}, DType::f32);
      Tensor gda = Tensor::empty(cuda(), shape, dtype), gdb = Tensor::empty(cuda(), shape, dtype);
      l1_loss_forward(ga, gb, loss);
      l1_loss_backward(ga, gb, 0.75f, gda, gdb);
      // A long f32 sum of exact inputs: relative error well under 1e-5.
      EXPECT_TRUE(testing::all_close(loss.to_host_f32(), loss_ref.to_host_f32(), {1e-6, 1e-5}, what + " loss"));
      EXPECT_TRUE(testing::all_close(gda.to_host_f32(), da_ref.to_host_f32(), elementwise(dtype), what + " da"));
      EXPECT_TRUE(testing::all_close(gdb.to_host_f32(), db_ref.to_host_f32(), elementwise(dtype), what + " db"));
    }
}

TEST_F(GpuOps, SumMeanAndChannelMeanAreDeterministicAndMatch) {
  const std::vector<Shape> shapes = {{1}, {7, 3}, {2, 17, 13, 5}, {4, 256, 256, 3}, {3, 1024, 1031}};
  for (DType dtype : kDtypes)
    for (const Shape& shape : shapes) {
      const std::string what = testing::describe_case("reduce", shape, dtype);
      // Positive values: a sum without cancellation, so a relative tolerance is meaningful.
      Tensor x = testing::random_tensor(host, shape, dtype, 9, 0.0f, 1.0f);
      const std::int64_t channels = shape.back();
      Tensor sum_ref = Tensor::empty(host, {1}, DType::f32), mean_ref = Tensor::empty(host, {1}, DType::f32);
      Tensor channel_ref = Tensor::empty(host, {channels}, DType::f32);
      sum(x, sum_ref);
      mean(x, mean_ref);
      channel_mean(x, channel_ref);
      Tensor gx = testing::copy_to(cuda(), x);
      Tensor gsum = Tensor::empty(cuda(), {1}, DType::f32), gsum2 = Tensor::empty(cuda(), {1}, DType::f32);
      Tensor gmean = Tensor::empty(cuda(), {1}, DType::f32);
      Tensor gchannel = Tensor::empty(cuda(), {channels}, DType::f32);
      sum(gx, gsum);
      sum(gx, gsum2);
      mean(gx, gmean);
      channel_mean(gx, gchannel);
      // Up to 3M f32 additions in a fixed tree: relative error ~1e-6; allow 2e-5.
      const testing::Tolerance long_sum{1e-6, 2e-5};
      EXPECT_TRUE(testing::all_close(gsum.to_host_f32(), sum_ref.to_host_f32(), long_sum, what + " sum"));
      EXPECT_EQ(gsum.to_host_f32(), gsum2.to_host_f32()) << what << ": sum not deterministic";
      EXPECT_TRUE(testing::all_close(gmean.to_host_f32(), mean_ref.to_host_f32(), long_sum, what + " mean"));
      EXPECT_TRUE(testing::all_close(gchannel.to_host_f32(), channel_ref.to_host_f32(), long_sum,
                                     what + " channel_mean"));
    }
}

}  // namespace
}  // namespace oomlab::ops
