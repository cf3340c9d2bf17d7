// conv2d's CPU reference on hand-computed cases, its shape rules, bad-argument errors, and the
// dry backend (shape checks and the same workspace request, no computation).
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "kernels/conv/conv2d.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {
namespace {

struct HostConv : ::testing::Test {
  Device host{DeviceKind::host, {}};
  Tensor make(Shape shape, std::vector<float> values) {
    return Tensor::from_host(host, std::move(shape), DType::f32, values);
  }
};

TEST_F(HostConv, TwoByTwoKernelWithBiasMatchesHandComputedSums) {
  // x = [[1 2 3] [4 5 6] [7 8 9]], w = [[1 2] [3 4]]: y[0,0] = 1*1 + 2*2 + 4*3 + 5*4 = 37, ...
  Tensor x = make({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = make({1, 2, 2, 1}, {1, 2, 3, 4});
  Tensor bias = make({1}, {0.5f});
  Tensor y = Tensor::empty(host, {1, 2, 2, 1}, DType::f32);
  conv2d_forward(x, w, bias, y, {1, 0});
  EXPECT_EQ(y.to_host_f32(), (std::vector<float>{37.5f, 47.5f, 67.5f, 77.5f}));
}

TEST_F(HostConv, StrideTwoWithPaddingSumsOnlyTheInsideTaps) {
  // 3x3 ones, padding 1, stride 2: each output sums the 2x2 corner block its window covers.
  Tensor x = make({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = make({1, 3, 3, 1}, std::vector<float>(9, 1.0f));
  Tensor y = Tensor::empty(host, {1, 2, 2, 1}, DType::f32);
  conv2d_forward(x, w, Tensor(), y, {2, 1});
  EXPECT_EQ(y.to_host_f32(), (std::vector<float>{12, 16, 24, 28}));
}

TEST_F(HostConv, ChannelsAreContractedPerOutputChannel) {
  Tensor x = make({1, 1, 1, 2}, {1, 2});
  Tensor w = make({2, 1, 1, 2}, {3, 4, 5, 6});  // KRSC: out channel 0 = (3, 4), 1 = (5, 6)
  Tensor y = Tensor::empty(host, {1, 1, 1, 2}, DType::f32);
  conv2d_forward(x, w, Tensor(), y, {});
  EXPECT_EQ(y.to_host_f32(), (std::vector<float>{11, 17}));
}

TEST_F(HostConv, BackwardDataAndWeightOfTheTwoByTwoCase) {
  Tensor x = make({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = make({1, 2, 2, 1}, {1, 2, 3, 4});
  Tensor dy = make({1, 2, 2, 1}, {1, 0, 0, 2});
  Tensor dx = Tensor::empty(host, {1, 3, 3, 1}, DType::f32);
  conv2d_backward_data(dy, w, dx, {});
  // dy[0,0] spreads w onto x[0..1, 0..1]; 2*dy[1,1] onto x[1..2, 1..2].
  EXPECT_EQ(dx.to_host_f32(), (std::vector<float>{1, 2, 0, 3, 4 + 2, 4, 0, 6, 8}));
  Tensor dw = Tensor::empty(host, {1, 2, 2, 1}, DType::f32);
  Tensor dbias = Tensor::empty(host, {1}, DType::f32);
  conv2d_backward_weight(x, dy, dw, dbias, {});
  // dw[r,s] = x[r,s] * 1 + x[1+r, 1+s] * 2
  EXPECT_EQ(dw.to_host_f32(), (std::vector<float>{1 + 10, 2 + 12, 4 + 16, 5 + 18}));
  EXPECT_EQ(dbias.to_host_f32(), (std::vector<float>{3}));
}

TEST_F(HostConv, Bf16ReferenceRoundsTheSumOnce) {
  // 1 + 2^-8 + 2^-8 = 1 + 2^-7 is a bf16; rounding after each add would give 1 (1 + 2^-8 is a
  // tie that rounds to even), so this shows the accumulation is wide and rounded once.
  Tensor x = Tensor::from_host(host, {1, 1, 1, 3}, DType::bf16, {1.0f, 1.0f, 1.0f});
  Tensor w = Tensor::from_host(host, {1, 1, 1, 3}, DType::bf16, {1.0f, 1.0f / 256, 1.0f / 256});
  Tensor y = Tensor::empty(host, {1, 1, 1, 1}, DType::bf16);
  conv2d_forward(x, w, Tensor(), y, {});
  EXPECT_EQ(y.to_host_f32(), (std::vector<float>{1.0f + 1.0f / 128}));
}

TEST_F(HostConv, EpilogueAddsThenActivatesAndBackwardMasksByTheActivation) {
  // y = conv = (1 2 3 4) per pixel channel; + addend (-3 -3 -3 -3) -> (-2 -1 0 1); LeakyReLU 0.5.
  Tensor x = make({1, 1, 4, 1}, {1, 2, 3, 4});
  Tensor w = make({1, 1, 1, 1}, {1});
  ConvEpilogue forward;
  forward.addend = make({1, 1, 4, 1}, {-3, -3, -3, -3});
  forward.activation = true;
  forward.slope = 0.5f;
  Tensor y = Tensor::empty(host, {1, 1, 4, 1}, DType::f32);
  conv2d_forward(x, w, Tensor(), y, {}, forward);
  EXPECT_EQ(y.to_host_f32(), (std::vector<float>{-1, -0.5f, 0, 1}));

  // dx = (dy * w + addend) * (activation_output > 0 ? 1 : slope); ReLU (slope 0) here.
  Tensor dy = make({1, 1, 4, 1}, {1, 1, 1, 1});
  ConvEpilogue backward;
  backward.addend = make({1, 1, 4, 1}, {1, 2, 3, 4});
  backward.activation = true;
  backward.activation_output = make({1, 1, 4, 1}, {1, -1, 0, 2});
  Tensor dx = Tensor::empty(host, {1, 1, 4, 1}, DType::f32);
  conv2d_backward_data(dy, w, dx, {}, backward);
  EXPECT_EQ(dx.to_host_f32(), (std::vector<float>{2, 0, 0, 5}));
}

TEST_F(HostConv, MalformedEpilogueIsRejected) {
  Tensor x = Tensor::zeros(host, {1, 4, 4, 2}, DType::f32);
  Tensor w = Tensor::zeros(host, {2, 3, 3, 2}, DType::f32);
  Tensor y = Tensor::empty(host, {1, 4, 4, 2}, DType::f32);
  ConvEpilogue wrong_shape;
  wrong_shape.addend = Tensor::zeros(host, {1, 4, 4, 3}, DType::f32);
  EXPECT_THROW(conv2d_forward(x, w, Tensor(), y, {1, 1}, wrong_shape), std::invalid_argument);
  ConvEpilogue wrong_dtype;
  wrong_dtype.addend = Tensor::zeros(host, {1, 4, 4, 2}, DType::bf16);
  EXPECT_THROW(conv2d_forward(x, w, Tensor(), y, {1, 1}, wrong_dtype), std::invalid_argument);
  ConvEpilogue negative_slope;
  negative_slope.activation = true;
  negative_slope.slope = -0.1f;
  EXPECT_THROW(conv2d_forward(x, w, Tensor(), y, {1, 1}, negative_slope), std::invalid_argument);
  ConvEpilogue forward_with_output;
  forward_with_output.activation = true;
  forward_with_output.activation_output = Tensor::zeros(host, {1, 4, 4, 2}, DType::f32);
  EXPECT_THROW(conv2d_forward(x, w, Tensor(), y, {1, 1}, forward_with_output), std::invalid_argument);
  Tensor dx = Tensor::empty(host, {1, 4, 4, 2}, DType::f32);
  ConvEpilogue backward_without_output;
  backward_without_output.activation = true;
  EXPECT_THROW(conv2d_backward_data(y, w, dx, {1, 1}, backward_without_output), std::invalid_argument);
}

TEST(Conv2dShape, OutputSizeFollowsTheUsualFormula) {
  EXPECT_EQ(conv2d_output_shape({4, 256, 256, 64}, {64, 3, 3, 64}, {1, 1}), (Shape{4, 256, 256, 64}));
  EXPECT_EQ(conv2d_output_shape({4, 256, 256, 3}, {64, 4, 4, 3}, {2, 1}), (Shape{4, 128, 128, 64}));
  EXPECT_EQ(conv2d_output_shape({1, 17, 13, 3}, {5, 3, 3, 3}, {2, 0}), (Shape{1, 8, 6, 5}));
}

TEST(Conv2dShape, BadArgumentsThrowWithTheShapes) {
  EXPECT_THROW(conv2d_output_shape({1, 8, 8, 3}, {4, 3, 3, 5}, {}), std::invalid_argument);
  EXPECT_THROW(conv2d_output_shape({1, 8, 8}, {4, 3, 3, 8}, {}), std::invalid_argument);
  EXPECT_THROW(conv2d_output_shape({1, 2, 2, 3}, {4, 3, 3, 3}, {}), std::invalid_argument);
  EXPECT_THROW(conv2d_output_shape({1, 8, 8, 3}, {4, 3, 3, 3}, {0, 1}), std::invalid_argument);
  try {
    conv2d_output_shape({1, 8, 8, 3}, {4, 3, 3, 5}, {});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("(1, 8, 8, 3)"), std::string::npos) << e.what();
  }
}

TEST_F(HostConv, WrongOutputShapeDtypeOrBiasIsRejected) {
  Tensor x = Tensor::zeros(host, {1, 5, 5, 3}, DType::f32);
  Tensor w = Tensor::zeros(host, {4, 3, 3, 3}, DType::f32);
  Tensor y_wrong = Tensor::empty(host, {1, 5, 5, 4}, DType::f32);  // no padding: 3x3 expected
  EXPECT_THROW(conv2d_forward(x, w, Tensor(), y_wrong, {}), std::invalid_argument);
  Tensor y_bf16 = Tensor::empty(host, {1, 3, 3, 4}, DType::bf16);
  EXPECT_THROW(conv2d_forward(x, w, Tensor(), y_bf16, {}), std::invalid_argument);
  Tensor y = Tensor::empty(host, {1, 3, 3, 4}, DType::f32);
  Tensor bias_wrong = Tensor::zeros(host, {3}, DType::f32);
  EXPECT_THROW(conv2d_forward(x, w, bias_wrong, y, {}), std::invalid_argument);
  Tensor x_int = Tensor::zeros(host, {1, 5, 5, 3}, DType::i32);
  EXPECT_THROW(conv2d_forward(x_int, w, Tensor(), y, {}), std::invalid_argument);
}

TEST(Conv2dDry, ChecksShapesAndRequestsTheSameWorkspaceAsHost) {
  const Shape x_shape{2, 32, 32, 16}, w_shape{8, 3, 3, 16};
  const std::size_t workspace = conv2d_backward_weight_workspace_bytes(x_shape, w_shape, {1, 1}, true);
  EXPECT_GT(workspace, 0u);
  std::int64_t peaks[2];
  int i = 0;
  for (DeviceKind kind : {DeviceKind::dry, DeviceKind::host}) {
    Device device(kind, {});
    Tensor x = Tensor::empty(device, x_shape, DType::bf16);
    Tensor dy = Tensor::empty(device, {2, 32, 32, 8}, DType::bf16);
    Tensor dw = Tensor::empty(device, w_shape, DType::bf16);
    Tensor dbias = Tensor::empty(device, {8}, DType::bf16);
    if (kind == DeviceKind::host) {  // defined values for the host run
      x.fill(1.0);
      dy.fill(1.0);
    }
    device.allocator().reset_peak_stats();
    const std::int64_t before = device.allocator().stats().allocated.current;
    conv2d_backward_weight(x, dy, dw, dbias, {1, 1});
    peaks[i++] = device.allocator().stats().allocated.peak - before;
    Tensor y_wrong = Tensor::empty(device, {2, 30, 30, 8}, DType::bf16);
    EXPECT_THROW(conv2d_backward_weight(x, y_wrong, dw, dbias, {1, 1}), std::invalid_argument);
  }
  EXPECT_EQ(peaks[0], peaks[1]) << "dry and host must make the same requests";
  EXPECT_GE(peaks[0], static_cast<std::int64_t>(workspace));
}

}  // namespace
}  // namespace oomlab::ops
