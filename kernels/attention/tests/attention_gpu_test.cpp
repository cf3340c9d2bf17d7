// CUDA attention against the CPU references on random inputs (several shapes, T not a multiple
// of the 64-row tiles, D = 64 and 128, K/V heads Hkv = H, H / 2 .. 1 for grouped-query
// attention), and fused against naive on the GPU for the output and all three gradients. Every failure names the shape,
// the tensor, the first mismatches and the max error (the lead runs these on an H200 without us watching). The fused
// backward is checked on both its engines (wgmma on Hopper for D = 64, mma.sync everywhere else).
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/device/device.hpp"
#include "harness/testing/require_gpu.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/core/wgmma_device.hpp"
#include "kernels/attention/attention_reference.hpp"
#include "kernels/testing/compare.hpp"
#include "kernels/testing/random_fill.hpp"

namespace oomlab::ops {
namespace {

struct Case {
  Shape shape;                // q: (B, H, T, D)
  std::int64_t kv_heads = 0;  // Hkv of k and v; 0: H (multi-head)
  Shape kv_shape() const { return {shape[0], kv_heads ? kv_heads : shape[1], shape[2], shape[3]}; }
  std::int64_t group() const { return shape[1] / kv_shape()[1]; }
  std::string name() const { return shape_string(shape) + " Hkv " + std::to_string(kv_shape()[1]); }
};

std::vector<Case> gpu_cases() {
  return {{{1, 2, 77, 64}}, {{2, 2, 130, 64}}, {{1, 1, 1000, 64}}, {{1, 1, 1, 64}},
          {{1, 2, 128, 64}}, {{1, 2, 77, 128}}, {{2, 1, 130, 128}}, {{1, 1, 1000, 128}},
          // grouped-query: one K/V head for all (Hkv 1), groups of 2 and 4; T % 8 != 0 moves
          // each query head's dQ rows off the wgmma engine's 8-row permutation phase
          {{1, 4, 77, 64}, 1}, {{2, 4, 130, 64}, 2}, {{1, 8, 333, 64}, 2}, {{1, 4, 200, 128}, 1},
          {{2, 4, 77, 128}, 2}};
}

// Inputs in [-2, 2): scores spread enough that the softmax is not flat.
Tensor random_tensor(Device& device, const Shape& shape, DType dtype, std::uint32_t seed) {
  return testing::random_tensor(device, shape, dtype, seed, -2.0f, 2.0f);
}

reference::AttentionDims dims_of(const Case& c) {
  return {c.shape[0] * c.shape[1], c.shape[2], c.shape[3], c.group()};
}

// Inputs on the GPU and the reference results computed (in double) from the exact values the
// GPU sees, i.e. after rounding to the tensor dtype.
struct Problem {
  Case shapes;
  DType dtype;
  Tensor q, k, v, d_out;
  std::vector<float> ref_out, ref_lse, ref_dq, ref_dk, ref_dv;

  Problem(Device& device, const Case& c, DType dt, std::uint32_t seed) : shapes(c), dtype(dt) {
    q = random_tensor(device, c.shape, dt, seed);
    k = random_tensor(device, c.kv_shape(), dt, seed + 1);
    v = random_tensor(device, c.kv_shape(), dt, seed + 2);
    d_out = random_tensor(device, c.shape, dt, seed + 3);
    const auto qv = q.to_host_f32(), kv = k.to_host_f32(), vv = v.to_host_f32(), dov = d_out.to_host_f32();
    const auto dims = dims_of(c);
    ref_out.resize(qv.size());
    ref_lse.resize(std::size_t(dims.heads * dims.seq));
    reference::fused_attention_forward(dims, qv.data(), kv.data(), vv.data(), ref_out.data(), ref_lse.data());
    ref_dq.resize(qv.size());
    ref_dk.resize(kv.size());
    ref_dv.resize(kv.size());
    reference::fused_attention_backward(dims, qv.data(), kv.data(), vv.data(), ref_out.data(), ref_lse.data(),
                                        dov.data(), ref_dq.data(), ref_dk.data(), ref_dv.data());
  }
};

// Outputs of one attention run, allocated on the device.
struct Results {
  Tensor out, dq, dk, dv;
  Results(Device& device, const Case& c, DType dtype)
      : out(Tensor::empty(device, c.shape, dtype)), dq(Tensor::empty(device, c.shape, dtype)),
        dk(Tensor::empty(device, c.kv_shape(), dtype)), dv(Tensor::empty(device, c.kv_shape(), dtype)) {}
};

Results run_naive(Device& device, Problem& p) {
  Results r(device, p.shapes, p.dtype);
  Tensor probs = Tensor::empty(device, attention_probs_shape(p.q), p.dtype);
  attention_naive_forward(p.q, p.k, p.v, probs, r.out);
  attention_naive_backward(p.q, p.k, p.v, probs, p.d_out, r.dq, r.dk, r.dv);
  device.synchronize();
  return r;
}

Results run_fused(Device& device, Problem& p, Tensor* lse_out = nullptr) {
  Results r(device, p.shapes, p.dtype);
  Tensor lse = Tensor::empty(device, attention_lse_shape(p.q), DType::f32);
  attention_fused_forward(p.q, p.k, p.v, r.out, lse);
  attention_fused_backward(p.q, p.k, p.v, r.out, lse, p.d_out, r.dq, r.dk, r.dv);
  device.synchronize();
  if (lse_out) *lse_out = lse;
  return r;
}

// One rounding of a bf16 output plus bf16 operands inside the tensor-core products.
constexpr testing::Tolerance kBf16Out{1e-2, 1.6e-2};
constexpr testing::Tolerance kBf16Grad{2e-2, 2e-2};
constexpr testing::Tolerance kF32{1e-4, 1e-4};

// dK and dV of a K/V head sum `group` query heads' terms, each carrying its bf16 operand
// roundings: their absolute error grows like sqrt(group), as the sum's typical size does.
testing::Tolerance kv_grad_tolerance(testing::Tolerance per_head, std::int64_t group) {
  return {per_head.atol * std::sqrt(double(group)), per_head.rtol};
}

TEST(AttentionGpu, NaiveMatchesCpuReference) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, {});
  std::uint32_t seed = 100;
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (const Case& c : gpu_cases()) {
      SCOPED_TRACE(std::string("naive ") + dtype_name(dtype) + " " + c.name());
      Problem p(device, c, dtype, seed += 10);
      Results r = run_naive(device, p);
      // bf16 naive stores the unscaled scores in bf16 before the softmax (as a bf16 framework
      // would), one rounding more than the fused kernel: the output gets the gradients' margin.
      const auto out_tol = dtype == DType::f32 ? kF32 : kBf16Grad;
      const auto grad_tol = dtype == DType::f32 ? kF32 : kBf16Grad;
      const auto kv_tol = kv_grad_tolerance(grad_tol, c.group());
      EXPECT_TRUE(testing::all_close(r.out.to_host_f32(), p.ref_out, out_tol, "out"));
      EXPECT_TRUE(testing::all_close(r.dq.to_host_f32(), p.ref_dq, grad_tol, "dq"));
      EXPECT_TRUE(testing::all_close(r.dk.to_host_f32(), p.ref_dk, kv_tol, "dk"));
      EXPECT_TRUE(testing::all_close(r.dv.to_host_f32(), p.ref_dv, kv_tol, "dv"));
    }
  }
}

// The wgmma backward (Hopper, D = 64) switched off: the mma.sync kernel is what every other GPU
// runs, so both are checked on the GPU that has both.
using detail::WgmmaOff;

void expect_fused_matches_cpu_reference(const char* engine) {
  Device device(DeviceKind::cuda, {});
  std::uint32_t seed = 500;
  for (const Case& c : gpu_cases()) {
    SCOPED_TRACE(std::string("fused bf16 (") + engine + ") " + c.name());
    Problem p(device, c, DType::bf16, seed += 10);
    Tensor lse;
    Results r = run_fused(device, p, &lse);
    const auto kv_tol = kv_grad_tolerance(kBf16Grad, c.group());
    EXPECT_TRUE(testing::all_close(r.out.to_host_f32(), p.ref_out, kBf16Out, "out"));
    EXPECT_TRUE(testing::all_close(lse.to_host_f32(), p.ref_lse, {1e-3, 1e-3}, "lse"));
    EXPECT_TRUE(testing::all_close(r.dq.to_host_f32(), p.ref_dq, kBf16Grad, "dq"));
    EXPECT_TRUE(testing::all_close(r.dk.to_host_f32(), p.ref_dk, kv_tol, "dk"));
    EXPECT_TRUE(testing::all_close(r.dv.to_host_f32(), p.ref_dv, kv_tol, "dv"));
  }
}

TEST(AttentionGpu, FusedMatchesCpuReference) {
  OOMLAB_REQUIRE_GPU();
  expect_fused_matches_cpu_reference("default engine");
}

TEST(AttentionGpu, FusedMmaSyncBackwardMatchesCpuReference) {
  OOMLAB_REQUIRE_GPU();
  WgmmaOff mma_sync;
  expect_fused_matches_cpu_reference("mma.sync");
}

void expect_fused_equals_naive(const char* engine) {
  Device device(DeviceKind::cuda, {});
  std::uint32_t seed = 900;
  for (const Case& c : {Case{{2, 3, 257, 64}}, Case{{1, 2, 300, 128}}, Case{{1, 1, 2048, 64}},
                        Case{{2, 8, 257, 64}, 2}, Case{{1, 4, 300, 128}, 1}}) {
    SCOPED_TRACE(std::string("fused (") + engine + ") vs naive bf16 " + c.name());
    Problem p(device, c, DType::bf16, seed += 10);
    Results naive = run_naive(device, p);
    Results fused = run_fused(device, p);
    const auto kv_tol = kv_grad_tolerance(kBf16Grad, c.group());
    EXPECT_TRUE(testing::all_close(fused.out.to_host_f32(), naive.out.to_host_f32(), kBf16Grad, "out"));
    EXPECT_TRUE(testing::all_close(fused.dq.to_host_f32(), naive.dq.to_host_f32(), kBf16Grad, "dq"));
    EXPECT_TRUE(testing::all_close(fused.dk.to_host_f32(), naive.dk.to_host_f32(), kv_tol, "dk"));
    EXPECT_TRUE(testing::all_close(fused.dv.to_host_f32(), naive.dv.to_host_f32(), kv_tol, "dv"));
  }
}

TEST(AttentionGpu, FusedEqualsNaiveForOutputAndAllGradients) {
  OOMLAB_REQUIRE_GPU();
  expect_fused_equals_naive("default engine");
}

TEST(AttentionGpu, FusedMmaSyncBackwardEqualsNaive) {
  OOMLAB_REQUIRE_GPU();
  WgmmaOff mma_sync;
  expect_fused_equals_naive("mma.sync");
}

// Repeated runs: the forward and dK/dV are deterministic (grouped-query too: one block sums a
// K/V head's group in a fixed order); dQ (f32 atomic adds from every key block, in any order)
// may differ only in the last bits, so it is compared with the bf16 tolerance.
TEST(AttentionGpu, FusedIsRepeatable) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, {});
  for (const Case& c : {Case{{2, 2, 333, 64}}, Case{{2, 4, 333, 64}, 2}}) {
    SCOPED_TRACE(c.name());
    Problem p(device, c, DType::bf16, 1234);
    Results first = run_fused(device, p), second = run_fused(device, p);
    EXPECT_TRUE(testing::all_close(second.out.to_host_f32(), first.out.to_host_f32(), {0, 0}, "out"));
    EXPECT_TRUE(testing::all_close(second.dk.to_host_f32(), first.dk.to_host_f32(), {0, 0}, "dk"));
    EXPECT_TRUE(testing::all_close(second.dv.to_host_f32(), first.dv.to_host_f32(), {0, 0}, "dv"));
    EXPECT_TRUE(testing::all_close(second.dq.to_host_f32(), first.dq.to_host_f32(), kBf16Out, "dq"));
  }
}

// The fused kernel is bf16 only: f32 on cuda is a clear error, not a wrong result.
TEST(AttentionGpu, FusedRefusesF32OnCuda) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, {});
  const Shape shape{1, 1, 16, 64};
  Tensor q = random_tensor(device, shape, DType::f32, 7), out = Tensor::empty(device, shape, DType::f32);
  Tensor lse = Tensor::empty(device, attention_lse_shape(q), DType::f32);
  EXPECT_THROW(attention_fused_forward(q, q, q, out, lse), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::ops
