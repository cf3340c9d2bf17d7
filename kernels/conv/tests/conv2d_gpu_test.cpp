// The implicit-GEMM conv2d kernels (forward, backward-data, backward-weight + bias) against the
// CPU reference on seeded random data, for f32, bf16 and f16 and shapes that exercise every path:
// odd channel counts (element-wise gathers), multiples of 8 (16-byte cp.async), every tile
// shape (narrow 8/16-wide, 64-wide, 128x128), tails of every tile dim, 3x3 and 4x4, stride 1
// and 2, padding 0-2; every pass on both engines where Hopper's wgmma applies (wgmma, including
// the shifted-window kernels, and mma.sync), and the fused epilogues against the separate ops.
// Backward-weight with <= 4 channels on one side has its own suite below.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>

#include "harness/testing/require_gpu.hpp"
#include "kernels/conv/conv2d.hpp"
#include "kernels/core/engines.hpp"
#include "kernels/core/wgmma_device.hpp"
#include "kernels/conv/leaky_relu.hpp"
#include "kernels/conv/tests/gpu_test_support.hpp"
#include "kernels/testing/compare.hpp"
#include "kernels/testing/random_fill.hpp"
#include "kernels/core/residual.hpp"

namespace oomlab::ops {
namespace {

struct ConvCase {
  Shape x, w;
  Conv2dParams params;
  DType dtype;
};
std::ostream& operator<<(std::ostream& out, const ConvCase& c) {
  return out << dtype_name(c.dtype) << " x" << shape_string(c.x) << " w" << shape_string(c.w)
             << " stride " << c.params.stride << " pad " << c.params.padding;
}

// The reference sums in f64 and rounds once. bf16/f16: the kernels sum `terms` exact products
// in f32, then round once: one rounding of the output plus an f32 allowance growing with the
// terms. f32 runs on TF32 tensor cores (cuDNN's default): each operand is cut to a 10-bit
// mantissa (relative error in [0, 2^-10), mean ~3.5e-4), so each product shrinks by ~7e-4 of
// itself on average (a bias within rtol 1e-3 of the sum) and scatters by ~1.3e-4 around that on
// these [-1, 1) inputs, a spread growing as sqrt(terms): 1e-3 * sqrt(terms) is > 7 of its
// standard deviations.
testing::Tolerance exact_products_tolerance(DType dtype, std::int64_t terms) {
  testing::Tolerance tol = testing::tolerance_for(dtype);
  tol.atol += 2e-7 * static_cast<double>(terms);
  return tol;
}
testing::Tolerance conv_tolerance(DType dtype, std::int64_t terms) {
  if (dtype == DType::f32) return {1e-3 * std::sqrt(static_cast<double>(terms)), 1e-3};
  return exact_products_tolerance(dtype, terms);
}

class Conv2dGpu : public ::testing::TestWithParam<ConvCase> {};

using detail::WgmmaOff;

TEST_P(Conv2dGpu, ImplicitGemmMatchesReference) {
  OOMLAB_REQUIRE_GPU();
  const ConvCase& c = GetParam();
  Device host(DeviceKind::host, {});
  Device cuda(DeviceKind::cuda, {});
  const Shape y_shape = conv2d_output_shape(c.x, c.w, c.params);
  const Shape b_shape{c.w[0]};
  Tensor x = testing::random_tensor(host, c.x, c.dtype, 101);
  Tensor w = testing::random_tensor(host, c.w, c.dtype, 102);
  Tensor bias = testing::random_tensor(host, b_shape, c.dtype, 103);
  Tensor dy = testing::random_tensor(host, y_shape, c.dtype, 104);

  Tensor y_ref = Tensor::empty(host, y_shape, c.dtype);
  Tensor dx_ref = Tensor::empty(host, c.x, c.dtype);
  Tensor dw_ref = Tensor::empty(host, c.w, c.dtype);
  Tensor db_ref = Tensor::empty(host, b_shape, c.dtype);
  conv2d_forward(x, w, bias, y_ref, c.params);
  conv2d_backward_data(dy, w, dx_ref, c.params);
  conv2d_backward_weight(x, dy, dw_ref, db_ref, c.params);

  Tensor gx = testing::copy_to(cuda, x), gw = testing::copy_to(cuda, w);
  Tensor gbias = testing::copy_to(cuda, bias), gdy = testing::copy_to(cuda, dy);
  Tensor gy = Tensor::empty(cuda, y_shape, c.dtype);
  Tensor gdx = Tensor::empty(cuda, c.x, c.dtype);
  Tensor gdw = Tensor::empty(cuda, c.w, c.dtype);
  Tensor gdb = Tensor::empty(cuda, b_shape, c.dtype);
  // Outputs start as NaN so an element a kernel never writes cannot pass.
  for (Tensor* t : {&gy, &gdx, &gdw, &gdb}) t->fill(std::nan(""));
  conv2d_forward(gx, gw, gbias, gy, c.params);
  conv2d_backward_data(gdy, gw, gdx, c.params);
  conv2d_backward_weight(gx, gdy, gdw, gdb, c.params);
  cuda.synchronize();

  // Every pass again with wgmma off: on Hopper the default is wgmma, this is mma.sync.
  Tensor gy_mma_sync = Tensor::empty(cuda, y_shape, c.dtype);
  Tensor gdx_mma_sync = Tensor::empty(cuda, c.x, c.dtype);
  Tensor gdw_mma_sync = Tensor::empty(cuda, c.w, c.dtype);
  for (Tensor* t : {&gy_mma_sync, &gdx_mma_sync, &gdw_mma_sync}) t->fill(std::nan(""));
  {
    const WgmmaOff off;
    conv2d_forward(gx, gw, gbias, gy_mma_sync, c.params);
    conv2d_backward_data(gdy, gw, gdx_mma_sync, c.params);
    conv2d_backward_weight(gx, gdy, gdw_mma_sync, Tensor{}, c.params);
    cuda.synchronize();
  }

  const std::int64_t rsc = c.w[1] * c.w[2] * c.w[3], rsk = c.w[0] * c.w[1] * c.w[2];
  const std::int64_t npq = y_shape[0] * y_shape[1] * y_shape[2];
  EXPECT_TRUE(testing::all_close(gy.to_host_f32(), y_ref.to_host_f32(), conv_tolerance(c.dtype, rsc),
                                 "forward y"))
      << c;
  EXPECT_TRUE(testing::all_close(gy_mma_sync.to_host_f32(), y_ref.to_host_f32(), conv_tolerance(c.dtype, rsc),
                                 "forward y (mma.sync)"))
      << c;
  EXPECT_TRUE(testing::all_close(gdx.to_host_f32(), dx_ref.to_host_f32(),
                                 conv_tolerance(c.dtype, rsk), "backward-data dx"))
      << c;
  EXPECT_TRUE(testing::all_close(gdx_mma_sync.to_host_f32(), dx_ref.to_host_f32(),
                                 conv_tolerance(c.dtype, rsk), "backward-data dx (mma.sync)"))
      << c;
  EXPECT_TRUE(testing::all_close(gdw.to_host_f32(), dw_ref.to_host_f32(),
                                 conv_tolerance(c.dtype, npq), "backward-weight dw"))
      << c;
  EXPECT_TRUE(testing::all_close(gdw_mma_sync.to_host_f32(), dw_ref.to_host_f32(),
                                 conv_tolerance(c.dtype, npq), "backward-weight dw (mma.sync)"))
      << c;
  EXPECT_TRUE(testing::all_close(gdb.to_host_f32(), db_ref.to_host_f32(),
                                 conv_tolerance(c.dtype, npq), "backward-weight dbias"))
      << c;
}

// The fused epilogue (residual add, then LeakyReLU / ReLU or their gradient) gives the same bits
// as the plain pass followed by the separate ops on cuda, on every engine that takes the shape
// (wgmma, mma.sync, the direct narrow kernels).
TEST_P(Conv2dGpu, EpilogueEqualsSeparateOpsBitwise) {
  OOMLAB_REQUIRE_GPU();
  const ConvCase& c = GetParam();
  Device cuda(DeviceKind::cuda, {});
  const Shape y_shape = conv2d_output_shape(c.x, c.w, c.params);
  Tensor x = testing::random_tensor(cuda, c.x, c.dtype, 301);
  Tensor w = testing::random_tensor(cuda, c.w, c.dtype, 302);
  Tensor bias = testing::random_tensor(cuda, {c.w[0]}, c.dtype, 303);
  Tensor dy = testing::random_tensor(cuda, y_shape, c.dtype, 304);
  Tensor y_addend = testing::random_tensor(cuda, y_shape, c.dtype, 305);
  Tensor dx_addend = testing::random_tensor(cuda, c.x, c.dtype, 306);
  Tensor activated = testing::random_tensor(cuda, c.x, c.dtype, 307);  // both signs

  for (bool wgmma : {true, false}) {
    detail::allow_wgmma(wgmma);
    for (float slope : {0.0f, 0.2f}) {
      for (bool add : {false, true}) {
        const std::string what = std::string(wgmma ? "default engine" : "mma.sync") + " slope " +
                                 std::to_string(slope) + (add ? " with addend" : "");
        ConvEpilogue forward_epilogue;
        forward_epilogue.addend = add ? y_addend : Tensor();
        forward_epilogue.activation = true;
        forward_epilogue.slope = slope;
        Tensor fused = Tensor::empty(cuda, y_shape, c.dtype), separate = Tensor::empty(cuda, y_shape, c.dtype);
        conv2d_forward(x, w, bias, fused, c.params, forward_epilogue);
        conv2d_forward(x, w, bias, separate, c.params);
        if (add) residual_add(separate, separate, y_addend);
        leaky_relu_forward(separate, separate, slope);
        EXPECT_EQ(fused.to_host_f32(), separate.to_host_f32()) << "forward, " << what << ": " << c;

        ConvEpilogue backward_epilogue;
        backward_epilogue.addend = add ? dx_addend : Tensor();
        backward_epilogue.activation = true;
        backward_epilogue.slope = slope;
        backward_epilogue.activation_output = activated;
        Tensor dx_fused = Tensor::empty(cuda, c.x, c.dtype), dx_separate = Tensor::empty(cuda, c.x, c.dtype);
        conv2d_backward_data(dy, w, dx_fused, c.params, backward_epilogue);
        conv2d_backward_data(dy, w, dx_separate, c.params);
        if (add) residual_add(dx_separate, dx_separate, dx_addend);
        leaky_relu_backward(activated, dx_separate, dx_separate, slope);
        EXPECT_EQ(dx_fused.to_host_f32(), dx_separate.to_host_f32()) << "backward-data, " << what << ": " << c;
      }
    }
  }
  detail::allow_wgmma(true);
}

std::vector<ConvCase> all_cases() {
  const std::vector<std::pair<std::pair<Shape, Shape>, Conv2dParams>> shapes = {
      {{{2, 17, 13, 3}, {5, 3, 3, 3}}, {1, 1}},       // 3 -> 5: element-wise gathers everywhere
      {{{1, 17, 13, 3}, {5, 4, 4, 3}}, {2, 1}},       // 4x4 stride 2 with padding
      {{{2, 16, 16, 64}, {64, 3, 3, 64}}, {1, 1}},    // the SR-GAN residual conv (vector path)
      {{{1, 33, 31, 64}, {3, 3, 3, 64}}, {1, 1}},     // 64 -> 3: narrow tiles, odd image
      {{{1, 12, 10, 3}, {64, 3, 3, 3}}, {1, 1}},      // 3 -> 64: the first conv
      {{{1, 20, 18, 32}, {48, 4, 4, 32}}, {2, 1}},    // discriminator-style 4x4 stride 2
      {{{3, 9, 11, 16}, {70, 3, 3, 16}}, {2, 0}},     // N tail across two 64-wide tiles
      {{{1, 9, 7, 8}, {16, 3, 3, 8}}, {1, 2}},        // padding 2, 8 channels (one vector)
      {{{2, 8, 8, 24}, {40, 1, 1, 24}}, {1, 0}},      // 1x1
      {{{1, 8, 9, 64}, {256, 3, 3, 64}}, {1, 1}},     // 64 -> 256: 128x128 tiles, two N tiles
      {{{2, 32, 32, 64}, {64, 3, 3, 64}}, {1, 1}},    // backward-weight in 8 splits of 256 rows
      {{{1, 10, 12, 128}, {64, 3, 3, 128}}, {1, 1}},  // backward-data with N = c = 128
      // Backward-data by stride phase: phases of unequal size (odd images), every phase with
      // its own taps, phases with no taps at all (1x1 stride 2: their dx is zero).
      {{{2, 19, 15, 64}, {128, 4, 4, 64}}, {2, 1}},   // the discriminator's 64 -> 128, vector path
      {{{1, 11, 10, 16}, {24, 3, 3, 16}}, {3, 1}},    // stride 3: one tap per phase and dim
      {{{2, 9, 7, 8}, {8, 1, 1, 8}}, {2, 0}},         // 1x1 stride 2: three phases without taps
      // 16-bit backward-weight by shifted windows on Hopper (stride 1, <= 3 taps a row, 64-channel
      // multiples): 64-pixel segments with tails, several channel chunks on both sides, padding
      // rows and columns, kernels of 1-3 taps a row.
      {{{3, 7, 70, 128}, {192, 3, 3, 128}}, {1, 1}},  // 2 segments (the second of 6), 3 x 2 chunks
      {{{1, 6, 9, 64}, {64, 3, 3, 64}}, {1, 2}},      // padding 2: dy larger than x
      {{{1, 9, 5, 64}, {64, 1, 3, 64}}, {1, 1}},      // one kernel row, whole padding rows of dy
      {{{2, 10, 67, 64}, {128, 2, 2, 64}}, {1, 0}},   // 2x2, q = 66: a 2-pixel second segment
      {{{1, 5, 130, 64}, {64, 1, 1, 64}}, {1, 0}},    // 1x1: 3 segments
      // 16-bit forward / backward-data by shifted windows on Hopper (3x3 stride 1, 64 channels in
      // and out; the residual-conv shapes above take it too): segments with tails, padding 0-2.
      {{{2, 5, 131, 64}, {64, 3, 3, 64}}, {1, 0}},    // q = 129: 3 segments; backward-data padding 2
  };
  std::vector<ConvCase> cases;
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (const auto& [xw, params] : shapes) cases.push_back({xw.first, xw.second, params, dtype});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dGpu, ::testing::ValuesIn(all_cases()));

TEST(Conv2dGpuLarge, BackwardWeightWithManySplitsIsDeterministic) {
  OOMLAB_REQUIRE_GPU();
  // 4 x 64 x 64 pixels: backward-weight splits the 16384-row reduction; two runs give the same
  // bits (fixed partitions, no atomics), and the result matches the reference. 32 channels run
  // the implicit GEMM, 64 (on Hopper) the shifted windows.
  Device host(DeviceKind::host, {});
  Device cuda(DeviceKind::cuda, {});
  for (std::int64_t channels : {32, 64}) {
    const Shape x_shape{4, 64, 64, channels}, w_shape{channels, 3, 3, channels};
    const Shape y_shape = conv2d_output_shape(x_shape, w_shape, {1, 1});
    Tensor x = testing::random_tensor(host, x_shape, DType::bf16, 7);
    Tensor dy = testing::random_tensor(host, y_shape, DType::bf16, 8);
    Tensor dw_ref = Tensor::empty(host, w_shape, DType::bf16);
    Tensor db_ref = Tensor::empty(host, {channels}, DType::bf16);
    conv2d_backward_weight(x, dy, dw_ref, db_ref, {1, 1});

    Tensor gx = testing::copy_to(cuda, x), gdy = testing::copy_to(cuda, dy);
    Tensor dw1 = Tensor::empty(cuda, w_shape, DType::bf16), dw2 = Tensor::empty(cuda, w_shape, DType::bf16);
    Tensor db1 = Tensor::empty(cuda, {channels}, DType::bf16), db2 = Tensor::empty(cuda, {channels}, DType::bf16);
    conv2d_backward_weight(gx, gdy, dw1, db1, {1, 1});
    conv2d_backward_weight(gx, gdy, dw2, db2, {1, 1});
    const std::string what = " bf16 " + shape_string(x_shape);
    EXPECT_EQ(dw1.to_host_f32(), dw2.to_host_f32()) << what;
    EXPECT_EQ(db1.to_host_f32(), db2.to_host_f32()) << what;
    EXPECT_TRUE(testing::all_close(dw1.to_host_f32(), dw_ref.to_host_f32(), conv_tolerance(DType::bf16, 16384),
                                   "dw" + what));
    EXPECT_TRUE(testing::all_close(db1.to_host_f32(), db_ref.to_host_f32(), conv_tolerance(DType::bf16, 16384),
                                   "dbias" + what));
  }
}

TEST(Conv2dGpuLarge, ShiftedBackwardWeightOnManyBlocksMatchesMmaSync) {
  OOMLAB_REQUIRE_GPU();
  // 128 -> 256 channels over 4 x 64 x 64 pixels: enough blocks (29 splits x 3 kernel rows x 8
  // chunk pairs) that the shifted-window kernel runs without clusters (the small shapes above run
  // clusters of 2 and 4); checked against the mma.sync engine (the CPU reference would take
  // minutes here).
  Device host(DeviceKind::host, {});
  Device cuda(DeviceKind::cuda, {});
  const Shape x_shape{4, 64, 64, 128}, w_shape{256, 3, 3, 128};
  const Shape y_shape = conv2d_output_shape(x_shape, w_shape, {1, 1});
  Tensor gx = testing::copy_to(cuda, testing::random_tensor(host, x_shape, DType::bf16, 9));
  Tensor gdy = testing::copy_to(cuda, testing::random_tensor(host, y_shape, DType::bf16, 10));
  Tensor dw = Tensor::empty(cuda, w_shape, DType::bf16), dw_mma_sync = Tensor::empty(cuda, w_shape, DType::bf16);
  conv2d_backward_weight(gx, gdy, dw, Tensor{}, {1, 1});
  {
    const WgmmaOff off;
    conv2d_backward_weight(gx, gdy, dw_mma_sync, Tensor{}, {1, 1});
  }
  EXPECT_TRUE(testing::all_close(dw.to_host_f32(), dw_mma_sync.to_host_f32(), conv_tolerance(DType::bf16, 16384),
                                 "dw bf16 (4,64,64,128) -> 256 against mma.sync"));
}

// A card with 99 KiB of shared memory per block (8.6, 8.9, 12.x: RTX 30xx-50xx, A10, L4, L40S),
// emulated on this one (ops::limit_shared_bytes), on the mma.sync engine those cards run: f32
// forward and backward-data with N > 64 take 128 x 64 tiles (128 x 128 would need 108 KiB), and
// the direct kernel's 9x9 first conv asks for only the shared memory it uses.
TEST(Conv2dGpuSmallCard, NinetyNineKiBPerBlockMatchesReference) {
  OOMLAB_REQUIRE_GPU();
  struct Limit {
    Limit() { limit_shared_bytes(99 * 1024); }
    ~Limit() { limit_shared_bytes(0); }
  } limit;
  const WgmmaOff off;
  Device host(DeviceKind::host, {});
  Device cuda(DeviceKind::cuda, {});
  const std::vector<ConvCase> cases = {
      {{1, 8, 9, 64}, {256, 3, 3, 64}, {1, 1}, DType::f32},   // N = 256 > 64
      {{1, 10, 12, 128}, {96, 3, 3, 128}, {1, 1}, DType::f32},  // backward-data N = c = 128
      {{1, 20, 36, 3}, {64, 9, 9, 3}, {1, 4}, DType::bf16},   // the SR-GAN's first conv: 91 KiB direct
  };
  for (const ConvCase& c : cases) {
    const Shape y_shape = conv2d_output_shape(c.x, c.w, c.params);
    Tensor x = testing::random_tensor(host, c.x, c.dtype, 401);
    Tensor w = testing::random_tensor(host, c.w, c.dtype, 402);
    Tensor dy = testing::random_tensor(host, y_shape, c.dtype, 403);
    Tensor y_ref = Tensor::empty(host, y_shape, c.dtype), dx_ref = Tensor::empty(host, c.x, c.dtype);
    conv2d_forward(x, w, Tensor{}, y_ref, c.params);
    conv2d_backward_data(dy, w, dx_ref, c.params);
    Tensor gx = testing::copy_to(cuda, x), gw = testing::copy_to(cuda, w), gdy = testing::copy_to(cuda, dy);
    Tensor gy = Tensor::empty(cuda, y_shape, c.dtype), gdx = Tensor::empty(cuda, c.x, c.dtype);
    for (Tensor* t : {&gy, &gdx}) t->fill(std::nan(""));
    conv2d_forward(gx, gw, Tensor{}, gy, c.params);
    conv2d_backward_data(gdy, gw, gdx, c.params);
    cuda.synchronize();
    const std::int64_t rsc = c.w[1] * c.w[2] * c.w[3], rsk = c.w[0] * c.w[1] * c.w[2];
    EXPECT_TRUE(testing::all_close(gy.to_host_f32(), y_ref.to_host_f32(), conv_tolerance(c.dtype, rsc), "y"))
        << c;
    EXPECT_TRUE(testing::all_close(gdx.to_host_f32(), dx_ref.to_host_f32(), conv_tolerance(c.dtype, rsk), "dx"))
        << c;
  }
}

// Backward-weight with <= 4 channels on one side skips the GEMM (wgrad_small_channels.cuh): the
// narrow side is c (x) when c <= 4, else k (dy, staged dilated for stride > 1). Cases: each
// narrow count 1-4, narrow c and narrow k at stride 1 and 2, 1x1/3x3/4x4/5x5, odd images
// (partial 8 x 32 tiles), batch 1 and 3, wide channels that fill 16-channel chunks partly (16-byte
// loads: multiples of 8 bf16/f16 or 4 f32; element loads otherwise), with and without bias, and
// tile counts that the split partials do not divide evenly.
struct WgradCase {
  ConvCase conv;
  bool bias;
};
std::ostream& operator<<(std::ostream& out, const WgradCase& c) {
  return out << c.conv << (c.bias ? " with bias" : " without bias");
}

class Conv2dGpuNarrowWgrad : public ::testing::TestWithParam<WgradCase> {};

TEST_P(Conv2dGpuNarrowWgrad, MatchesReferenceAndRepeatsBitwise) {
  OOMLAB_REQUIRE_GPU();
  const WgradCase& wc = GetParam();
  const ConvCase& c = wc.conv;
  Device host(DeviceKind::host, {});
  Device cuda(DeviceKind::cuda, {});
  const Shape y_shape = conv2d_output_shape(c.x, c.w, c.params);
  const Shape b_shape{c.w[0]};
  Tensor x = testing::random_tensor(host, c.x, c.dtype, 201);
  Tensor dy = testing::random_tensor(host, y_shape, c.dtype, 202);
  Tensor dw_ref = Tensor::empty(host, c.w, c.dtype);
  Tensor db_ref = wc.bias ? Tensor::empty(host, b_shape, c.dtype) : Tensor();
  conv2d_backward_weight(x, dy, dw_ref, db_ref, c.params);

  Tensor gx = testing::copy_to(cuda, x), gdy = testing::copy_to(cuda, dy);
  Tensor dw1 = Tensor::empty(cuda, c.w, c.dtype), dw2 = Tensor::empty(cuda, c.w, c.dtype);
  Tensor db1 = wc.bias ? Tensor::empty(cuda, b_shape, c.dtype) : Tensor();
  Tensor db2 = wc.bias ? Tensor::empty(cuda, b_shape, c.dtype) : Tensor();
  for (Tensor* t : {&dw1, &dw2, &db1, &db2}) {
    if (t->defined()) t->fill(std::nan(""));  // an element never written cannot pass
  }
  conv2d_backward_weight(gx, gdy, dw1, db1, c.params);
  conv2d_backward_weight(gx, gdy, dw2, db2, c.params);
  cuda.synchronize();

  // This path multiplies f32 exactly (no TF32), so f32 too gets the bf16/f16 rule: one rounding
  // plus the f32 summation allowance (TF32 products, ~1e-4 each, would fail it).
  const std::int64_t npq = y_shape[0] * y_shape[1] * y_shape[2];
  EXPECT_TRUE(testing::all_close(dw1.to_host_f32(), dw_ref.to_host_f32(),
                                 exact_products_tolerance(c.dtype, npq), "backward-weight dw"))
      << wc;
  EXPECT_EQ(dw1.to_host_f32(), dw2.to_host_f32()) << "dw differs between two runs: " << wc;
  if (wc.bias) {
    EXPECT_TRUE(testing::all_close(db1.to_host_f32(), db_ref.to_host_f32(),
                                   conv_tolerance(c.dtype, npq), "backward-weight dbias"))
        << wc;
    EXPECT_EQ(db1.to_host_f32(), db2.to_host_f32()) << "dbias differs between two runs: " << wc;
  }
}

std::vector<WgradCase> narrow_wgrad_cases() {
  const std::vector<std::pair<std::pair<Shape, Shape>, Conv2dParams>> shapes = {
      // narrow c (x): the discriminator's RGB input conv and the generator's first conv
      {{{3, 37, 29, 3}, {64, 4, 4, 3}}, {2, 1}},    // 4x4 s2, batch 3, 4 full chunks
      {{{1, 37, 29, 3}, {40, 3, 3, 3}}, {1, 1}},    // 3x3 s1, batch 1, last chunk half full
      {{{2, 100, 70, 3}, {24, 3, 3, 3}}, {1, 1}},   // 78 tiles over 55 partials (uneven)
      {{{1, 21, 19, 2}, {7, 5, 5, 2}}, {1, 2}},     // 5x5 (25 taps), 7 wide channels (elements)
      {{{2, 9, 11, 4}, {5, 1, 1, 4}}, {1, 0}},      // 1x1: one tap, 256 pixel groups
      {{{1, 13, 17, 1}, {16, 3, 3, 1}}, {2, 0}},    // one channel, stride 2 without padding
      {{{1, 9, 11, 3}, {3, 3, 3, 3}}, {2, 1}},      // 3 -> 3 (both narrow: narrow c)
      // narrow k (dy): the generator's RGB output conv and the discriminator's head
      {{{3, 37, 29, 64}, {3, 3, 3, 64}}, {1, 1}},   // 64 -> 3 3x3 s1, batch 3 (uneven split)
      {{{1, 37, 29, 24}, {3, 4, 4, 24}}, {2, 1}},   // 4x4 s2: dilated dy
      {{{1, 23, 31, 20}, {1, 3, 3, 20}}, {1, 1}},   // k = 1; 20 channels: bf16/f16 elements
      {{{2, 15, 13, 9}, {4, 3, 3, 9}}, {2, 1}},     // k = 4, 9 channels (elements), stride 2
      {{{1, 12, 40, 32}, {2, 3, 3, 32}}, {1, 0}},   // k = 2, no padding, two tile columns
  };
  std::vector<WgradCase> cases;
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (const auto& [xw, params] : shapes) {
      for (bool bias : {false, true}) cases.push_back({{xw.first, xw.second, params, dtype}, bias});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dGpuNarrowWgrad, ::testing::ValuesIn(narrow_wgrad_cases()));

}  // namespace
}  // namespace oomlab::ops
