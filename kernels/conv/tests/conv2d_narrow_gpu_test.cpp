// The direct conv2d kernels for <= 4 channels on one side (direct_narrow.cuh), called through their
// host entry points (direct_narrow.hpp) and compared with the CPU reference on seeded random data.
// Cases: the SR-GAN's RGB convs at reduced, odd sizes; each narrow count 1-4 on the input side
// (narrow_in_kernel) and the output side (narrow_out_kernel); both sides narrow; 1x1, 3x3, 4x4,
// 5x5; stride 1, 2 and 3 (backward-data by phase, including 1x1 stride 2 whose dx has pixels no
// tap reaches); padding 0-2; wide channel counts that fill the 64-channel output chunks partly
// (element stores) or the 16-channel input chunks partly (element loads); with and without bias.
// Outputs start as NaN, so an element never written fails.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <stdexcept>

#include "harness/testing/require_gpu.hpp"
#include "kernels/conv/conv2d.hpp"
#include "kernels/conv/direct_narrow.hpp"
#include "kernels/core/engines.hpp"
#include "kernels/conv/tests/gpu_test_support.hpp"
#include "kernels/testing/compare.hpp"
#include "kernels/testing/random_fill.hpp"

namespace oomlab::ops {
namespace {

detail::Conv2dGeometry geometry(const Shape& x, const Shape& w, Conv2dParams params) {
  const Shape y = conv2d_output_shape(x, w, params);  // also checks the shapes
  return {x[0], x[1], x[2], x[3], w[0], w[1], w[2], y[1], y[2], params.stride, params.padding};
}

struct NarrowCase {
  Shape x, w;
  Conv2dParams params;
  DType dtype;
  bool bias;
};
std::ostream& operator<<(std::ostream& out, const NarrowCase& c) {
  return out << dtype_name(c.dtype) << " x" << shape_string(c.x) << " w" << shape_string(c.w) << " stride "
             << c.params.stride << " pad " << c.params.padding << (c.bias ? " with bias" : " without bias");
}

// The reference sums in f64 and rounds once; the kernels sum exact products (of the T inputs,
// no TF32) in f32 and round once: one rounding of the output plus an f32 allowance per term.
testing::Tolerance exact_products_tolerance(DType dtype, std::int64_t terms) {
  testing::Tolerance tol = testing::tolerance_for(dtype);
  tol.atol += 2e-7 * static_cast<double>(terms);
  return tol;
}

class Conv2dGpuNarrowDirect : public ::testing::TestWithParam<NarrowCase> {};

TEST_P(Conv2dGpuNarrowDirect, ForwardMatchesReferenceAndRepeatsBitwise) {
  OOMLAB_REQUIRE_GPU();
  const NarrowCase& c = GetParam();
  const detail::Conv2dGeometry g = geometry(c.x, c.w, c.params);
  ASSERT_TRUE(detail::narrow_forward_applies(g)) << c;
  Device host(DeviceKind::host, {});
  Device cuda(DeviceKind::cuda, {});
  const Shape y_shape = conv2d_output_shape(c.x, c.w, c.params);
  Tensor x = testing::random_tensor(host, c.x, c.dtype, 301);
  Tensor w = testing::random_tensor(host, c.w, c.dtype, 302);
  Tensor bias = c.bias ? testing::random_tensor(host, {c.w[0]}, c.dtype, 303) : Tensor();
  Tensor y_ref = Tensor::empty(host, y_shape, c.dtype);
  conv2d_forward(x, w, bias, y_ref, c.params);

  Tensor gx = testing::copy_to(cuda, x), gw = testing::copy_to(cuda, w);
  Tensor gbias = c.bias ? testing::copy_to(cuda, bias) : Tensor();
  Tensor y1 = Tensor::empty(cuda, y_shape, c.dtype), y2 = Tensor::empty(cuda, y_shape, c.dtype);
  y1.fill(std::nan(""));
  y2.fill(std::nan(""));
  for (Tensor* y : {&y1, &y2}) {
    detail::narrow_forward_cuda(c.dtype, g, gx.data(), gw.data(), c.bias ? gbias.data() : nullptr, y->data(),
                                detail::EpilogueArgs{}, cuda.stream());
  }
  cuda.synchronize();

  EXPECT_TRUE(testing::all_close(y1.to_host_f32(), y_ref.to_host_f32(),
                                 exact_products_tolerance(c.dtype, g.r * g.s * g.c), "direct forward y"))
      << c;
  EXPECT_EQ(y1.to_host_f32(), y2.to_host_f32()) << "y differs between two runs: " << c;
}

TEST_P(Conv2dGpuNarrowDirect, BackwardDataMatchesReferenceAndRepeatsBitwise) {
  OOMLAB_REQUIRE_GPU();
  const NarrowCase& c = GetParam();
  const detail::Conv2dGeometry g = geometry(c.x, c.w, c.params);
  ASSERT_TRUE(detail::narrow_backward_data_applies(g)) << c;
  Device host(DeviceKind::host, {});
  Device cuda(DeviceKind::cuda, {});
  const Shape y_shape = conv2d_output_shape(c.x, c.w, c.params);
  Tensor dy = testing::random_tensor(host, y_shape, c.dtype, 304);
  Tensor w = testing::random_tensor(host, c.w, c.dtype, 305);
  Tensor dx_ref = Tensor::empty(host, c.x, c.dtype);
  conv2d_backward_data(dy, w, dx_ref, c.params);

  Tensor gdy = testing::copy_to(cuda, dy), gw = testing::copy_to(cuda, w);
  Tensor dx1 = Tensor::empty(cuda, c.x, c.dtype), dx2 = Tensor::empty(cuda, c.x, c.dtype);
  dx1.fill(std::nan(""));
  dx2.fill(std::nan(""));
  for (Tensor* dx : {&dx1, &dx2}) {
    detail::narrow_backward_data_cuda(c.dtype, g, gdy.data(), gw.data(), dx->data(), detail::EpilogueArgs{},
                                      cuda.stream());
  }
  cuda.synchronize();

  EXPECT_TRUE(testing::all_close(dx1.to_host_f32(), dx_ref.to_host_f32(),
                                 exact_products_tolerance(c.dtype, g.r * g.s * g.k), "direct backward-data dx"))
      << c;
  EXPECT_EQ(dx1.to_host_f32(), dx2.to_host_f32()) << "dx differs between two runs: " << c;
}

std::vector<NarrowCase> narrow_cases() {
  const std::vector<std::pair<std::pair<Shape, Shape>, Conv2dParams>> sr_gan = {
      {{{2, 37, 29, 3}, {64, 3, 3, 3}}, {1, 1}},     // generator's first conv 3 -> 64
      {{{2, 37, 29, 3}, {64, 4, 4, 3}}, {2, 1}},     // discriminator's RGB input 3 -> 64 4x4 s2
      {{{2, 37, 29, 64}, {3, 3, 3, 64}}, {1, 1}},    // generator's RGB output 64 -> 3
      {{{2, 13, 11, 512}, {1, 3, 3, 512}}, {1, 1}},  // discriminator's head 512 -> 1 (32 chunks)
  };
  const std::vector<std::pair<std::pair<Shape, Shape>, Conv2dParams>> others = {
      // narrow input c (forward: narrow_in_kernel; backward-data: narrow_out_kernel)
      {{{1, 37, 29, 1}, {16, 3, 3, 1}}, {1, 1}},     // c = 1, one partly filled chunk
      {{{2, 19, 23, 2}, {24, 3, 3, 2}}, {2, 0}},     // c = 2, 3x3 s2 without padding
      {{{1, 17, 40, 3}, {5, 4, 4, 3}}, {2, 1}},      // k = 5: element stores, two tile columns
      {{{1, 21, 19, 4}, {72, 5, 5, 4}}, {1, 2}},     // c = 4, 5x5, 72 = a full and a partial chunk
      {{{1, 11, 10, 2}, {16, 3, 3, 2}}, {3, 1}},     // stride 3
      {{{2, 9, 7, 3}, {8, 1, 1, 3}}, {2, 0}},        // 1x1 s2: dx pixels no tap reaches are zero
      // narrow output k (forward: narrow_out_kernel; backward-data: narrow_in_kernel)
      {{{1, 23, 31, 20}, {1, 3, 3, 20}}, {1, 1}},    // k = 1; 20 channels: bf16/f16 element loads
      {{{2, 15, 13, 9}, {2, 4, 4, 9}}, {2, 1}},      // k = 2, 9 channels, 4x4 s2
      {{{1, 12, 40, 32}, {3, 3, 3, 32}}, {2, 0}},    // k = 3, 3x3 s2 without padding
      {{{1, 21, 19, 24}, {4, 5, 5, 24}}, {1, 2}},    // k = 4, 5x5
      {{{2, 9, 7, 8}, {2, 1, 1, 8}}, {2, 0}},        // 1x1 s2 (dx with untouched pixels)
      // both sides narrow
      {{{1, 9, 11, 3}, {3, 3, 3, 3}}, {2, 1}},
      {{{2, 9, 11, 4}, {2, 1, 1, 4}}, {1, 0}},
  };
  std::vector<NarrowCase> cases;
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (bool bias : {false, true}) {
      for (const auto& list : {sr_gan, others}) {
        for (const auto& [xw, params] : list) cases.push_back({xw.first, xw.second, params, dtype, bias});
      }
    }
  }
  for (const auto& [xw, params] : sr_gan) cases.push_back({xw.first, xw.second, params, DType::f16, true});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dGpuNarrowDirect, ::testing::ValuesIn(narrow_cases()));

// Shape-only (no GPU needed): which convolutions the direct kernels take with Hopper's 227 KiB of
// shared memory a block (set as the limit, so that it holds with or without a GPU).
class Conv2dGpuNarrowDirectApplies : public ::testing::Test {
 protected:
  void SetUp() override { limit_shared_bytes(227 * 1024); }
  void TearDown() override { limit_shared_bytes(0); }
};

TEST_F(Conv2dGpuNarrowDirectApplies, TakesTheSrGanRgbConvsAtFullSize) {
  const std::vector<std::pair<std::pair<Shape, Shape>, Conv2dParams>> full = {
      {{{4, 256, 256, 3}, {64, 3, 3, 3}}, {1, 1}},
      {{{4, 1024, 1024, 3}, {64, 4, 4, 3}}, {2, 1}},
      {{{4, 1024, 1024, 64}, {3, 3, 3, 64}}, {1, 1}},
      {{{4, 64, 64, 512}, {1, 3, 3, 512}}, {1, 1}},
  };
  for (const auto& [xw, params] : full) {
    const detail::Conv2dGeometry g = geometry(xw.first, xw.second, params);
    EXPECT_TRUE(detail::narrow_forward_applies(g)) << shape_string(xw.first) << shape_string(xw.second);
    EXPECT_TRUE(detail::narrow_backward_data_applies(g)) << shape_string(xw.first) << shape_string(xw.second);
  }
}

TEST_F(Conv2dGpuNarrowDirectApplies, LeavesWideConvsToTheGemm) {
  for (const auto& [x, w] : {std::pair<Shape, Shape>{{2, 16, 16, 64}, {64, 3, 3, 64}},
                             std::pair<Shape, Shape>{{1, 20, 18, 5}, {5, 4, 4, 5}}}) {
    const detail::Conv2dGeometry g = geometry(x, w, {1, 1});
    EXPECT_FALSE(detail::narrow_forward_applies(g)) << shape_string(x) << shape_string(w);
    EXPECT_FALSE(detail::narrow_backward_data_applies(g)) << shape_string(x) << shape_string(w);
    // Called anyway: a clear exception before anything touches the (here null) pointers.
    EXPECT_THROW(detail::narrow_forward_cuda(DType::f32, g, nullptr, nullptr, nullptr, nullptr, {}, 0),
                 std::invalid_argument);
    EXPECT_THROW(detail::narrow_backward_data_cuda(DType::f32, g, nullptr, nullptr, nullptr, {}, 0),
                 std::invalid_argument);
  }
}

TEST_F(Conv2dGpuNarrowDirectApplies, LeavesKernelsTooLargeForSharedMemory) {
  // 3 -> 64 with a 15x15 kernel: 225 taps x 64 channels of weights alone are 230 KB.
  const detail::Conv2dGeometry g = geometry({1, 40, 40, 3}, {64, 15, 15, 3}, {1, 7});
  EXPECT_FALSE(detail::narrow_forward_applies(g));
  // 16 -> 3 at stride 3: a tile's input cells ((8-1)*3+3 x (32-1)*3+3, 80 bytes each) are 184 KB.
  const detail::Conv2dGeometry strided = geometry({1, 11, 10, 16}, {3, 3, 3, 16}, {3, 1});
  EXPECT_FALSE(detail::narrow_forward_applies(strided));
  EXPECT_TRUE(detail::narrow_backward_data_applies(strided));
}

}  // namespace
}  // namespace oomlab::ops
