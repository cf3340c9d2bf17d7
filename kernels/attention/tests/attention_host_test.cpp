// The public ops on host and dry devices: dispatch to the references, dtype rounding, argument
// checks, and the scratch each backward allocates (the same bytes on every device).
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "harness/device/device.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/attention/attention_reference.hpp"
#include "kernels/testing/compare.hpp"
#include "kernels/testing/random_fill.hpp"

namespace oomlab::ops {
namespace {

// Inputs in [-2, 2): scores spread enough that the softmax is not flat.
Tensor random_tensor(Device& device, const Shape& shape, DType dtype, std::uint32_t seed) {
  return testing::random_tensor(device, shape, dtype, seed, -2.0f, 2.0f);
}

reference::AttentionDims dims_of(const Shape& s) { return {s[0] * s[1], s[2], s[3]}; }

TEST(AttentionHost, NaiveMatchesReferenceInF32) {
  Device device(DeviceKind::host, {});
  const Shape shape{2, 3, 9, 8};
  Tensor q = random_tensor(device, shape, DType::f32, 1), k = random_tensor(device, shape, DType::f32, 2);
  Tensor v = random_tensor(device, shape, DType::f32, 3), d_out = random_tensor(device, shape, DType::f32, 4);
  Tensor probs = Tensor::empty(device, attention_probs_shape(q), DType::f32);
  Tensor out = Tensor::empty(device, shape, DType::f32);
  attention_naive_forward(q, k, v, probs, out);
  Tensor dq = Tensor::empty(device, shape, DType::f32), dk = Tensor::empty(device, shape, DType::f32);
  Tensor dv = Tensor::empty(device, shape, DType::f32);
  attention_naive_backward(q, k, v, probs, d_out, dq, dk, dv);

  const auto qv = q.to_host_f32(), kv = k.to_host_f32(), vv = v.to_host_f32(), dov = d_out.to_host_f32();
  std::vector<float> ref_probs(std::size_t(probs.numel())), ref_out(qv.size());
  reference::naive_attention_forward(dims_of(shape), qv.data(), kv.data(), vv.data(), ref_probs.data(),
                                     ref_out.data());
  std::vector<float> rdq(qv.size()), rdk(qv.size()), rdv(qv.size());
  reference::naive_attention_backward(dims_of(shape), qv.data(), kv.data(), vv.data(), ref_probs.data(),
                                      dov.data(), rdq.data(), rdk.data(), rdv.data());
  EXPECT_TRUE(testing::all_close(probs.to_host_f32(), ref_probs, {0, 0}, "probs"));
  EXPECT_TRUE(testing::all_close(out.to_host_f32(), ref_out, {0, 0}, "out"));
  EXPECT_TRUE(testing::all_close(dq.to_host_f32(), rdq, {0, 0}, "dq"));
  EXPECT_TRUE(testing::all_close(dk.to_host_f32(), rdk, {0, 0}, "dk"));
  EXPECT_TRUE(testing::all_close(dv.to_host_f32(), rdv, {0, 0}, "dv"));
}

// The two algorithms through the public API in bf16 (D = 64, the fused kernel's size) agree to
// bf16 rounding of the outputs.
TEST(AttentionHost, FusedEqualsNaiveInBf16) {
  Device device(DeviceKind::host, {});
  const Shape shape{1, 2, 11, 64};
  const DType bf16 = DType::bf16;
  Tensor q = random_tensor(device, shape, bf16, 5), k = random_tensor(device, shape, bf16, 6);
  Tensor v = random_tensor(device, shape, bf16, 7), d_out = random_tensor(device, shape, bf16, 8);
  Tensor probs = Tensor::empty(device, attention_probs_shape(q), bf16);
  Tensor naive_out = Tensor::empty(device, shape, bf16), fused_out = Tensor::empty(device, shape, bf16);
  Tensor lse = Tensor::empty(device, attention_lse_shape(q), DType::f32);
  attention_naive_forward(q, k, v, probs, naive_out);
  attention_fused_forward(q, k, v, fused_out, lse);
  const auto tolerance = testing::tolerance_for(bf16);
  EXPECT_TRUE(testing::all_close(fused_out.to_host_f32(), naive_out.to_host_f32(), tolerance, "out"));

  Tensor ndq = Tensor::empty(device, shape, bf16), ndk = Tensor::empty(device, shape, bf16);
  Tensor ndv = Tensor::empty(device, shape, bf16), fdq = Tensor::empty(device, shape, bf16);
  Tensor fdk = Tensor::empty(device, shape, bf16), fdv = Tensor::empty(device, shape, bf16);
  attention_naive_backward(q, k, v, probs, d_out, ndq, ndk, ndv);
  attention_fused_backward(q, k, v, fused_out, lse, d_out, fdq, fdk, fdv);
  // The naive backward reads bf16-rounded probabilities: allow a little more than one rounding.
  const testing::Tolerance grad_tolerance{2e-2, 2e-2};
  EXPECT_TRUE(testing::all_close(fdq.to_host_f32(), ndq.to_host_f32(), grad_tolerance, "dq"));
  EXPECT_TRUE(testing::all_close(fdk.to_host_f32(), ndk.to_host_f32(), grad_tolerance, "dk"));
  EXPECT_TRUE(testing::all_close(fdv.to_host_f32(), ndv.to_host_f32(), grad_tolerance, "dv"));
}

// The naive backward's (B, H, T, T) workspace and the fused backward's linear scratch are
// allocated on dry exactly as on host, and released before returning.
TEST(AttentionDry, BackwardScratchIsAllocatedAndReleased) {
  for (DeviceKind kind : {DeviceKind::dry, DeviceKind::host}) {
    Device device(kind, {});
    const Shape shape{2, 2, 64, 64};
    const DType bf16 = DType::bf16;
    Tensor q = Tensor::empty(device, shape, bf16), k = Tensor::empty(device, shape, bf16);
    Tensor v = Tensor::empty(device, shape, bf16), d_out = Tensor::empty(device, shape, bf16);
    Tensor out = Tensor::empty(device, shape, bf16), dq = Tensor::empty(device, shape, bf16);
    Tensor dk = Tensor::empty(device, shape, bf16), dv = Tensor::empty(device, shape, bf16);
    Tensor probs = Tensor::empty(device, attention_probs_shape(q), bf16);
    Tensor lse = Tensor::empty(device, attention_lse_shape(q), DType::f32);
    if (kind == DeviceKind::host) {  // real values so the references compute on finite numbers
      for (Tensor* t : {&q, &k, &v, &d_out}) t->fill(0.25);
      attention_naive_forward(q, k, v, probs, out);
      attention_fused_forward(q, k, v, out, lse);
    }
    const auto before = device.allocator().stats().allocated.current;

    device.allocator().reset_peak_stats();
    attention_naive_backward(q, k, v, probs, d_out, dq, dk, dv);
    auto stats = device.allocator().stats();
    EXPECT_EQ(stats.allocated.current, before) << device_kind_name(kind);
    EXPECT_GE(stats.allocated.peak - before, std::int64_t(attention_naive_backward_workspace_bytes(q)))
        << device_kind_name(kind);
    EXPECT_EQ(attention_naive_backward_workspace_bytes(q), std::size_t(2 * 2 * 64 * 64 * 2));

    device.allocator().reset_peak_stats();
    attention_fused_backward(q, k, v, out, lse, d_out, dq, dk, dv);
    stats = device.allocator().stats();
    EXPECT_EQ(stats.allocated.current, before) << device_kind_name(kind);
    EXPECT_GE(stats.allocated.peak - before, std::int64_t(attention_fused_backward_workspace_bytes(q)))
        << device_kind_name(kind);
    // Linear in T: delta (B, H, T) + dQ accumulator (B, H, T, D), both f32.
    EXPECT_EQ(attention_fused_backward_workspace_bytes(q), std::size_t((2 * 2 * 64 + 2 * 2 * 64 * 64) * 4));
  }
}

// Grouped-query attention through the public API on host: H = 4 query heads over Hkv = 2 K/V
// heads; dk, dv come back in k's shape and equal the reference's (exact in f32).
TEST(AttentionHost, GroupedQueryMatchesReferenceInF32) {
  Device device(DeviceKind::host, {});
  const Shape q_shape{2, 4, 9, 64}, kv_shape{2, 2, 9, 64};  // D = 64: the fused op's size
  const DType f32 = DType::f32;
  Tensor q = random_tensor(device, q_shape, f32, 1), k = random_tensor(device, kv_shape, f32, 2);
  Tensor v = random_tensor(device, kv_shape, f32, 3), d_out = random_tensor(device, q_shape, f32, 4);
  Tensor probs = Tensor::empty(device, attention_probs_shape(q), f32);
  Tensor out = Tensor::empty(device, q_shape, f32), lse = Tensor::empty(device, attention_lse_shape(q), f32);
  Tensor dq = Tensor::empty(device, q_shape, f32), dk = Tensor::empty(device, kv_shape, f32);
  Tensor dv = Tensor::empty(device, kv_shape, f32);
  reference::AttentionDims dims = dims_of(q_shape);
  dims.group = 2;
  const auto qv = q.to_host_f32(), kv = k.to_host_f32(), vv = v.to_host_f32(), dov = d_out.to_host_f32();
  std::vector<float> rprobs(std::size_t(probs.numel())), rout(qv.size()), rlse(std::size_t(lse.numel()));
  std::vector<float> rdq(qv.size()), rdk(kv.size()), rdv(kv.size());

  attention_naive_forward(q, k, v, probs, out);
  attention_naive_backward(q, k, v, probs, d_out, dq, dk, dv);
  reference::naive_attention_forward(dims, qv.data(), kv.data(), vv.data(), rprobs.data(), rout.data());
  reference::naive_attention_backward(dims, qv.data(), kv.data(), vv.data(), rprobs.data(), dov.data(),
                                      rdq.data(), rdk.data(), rdv.data());
  EXPECT_TRUE(testing::all_close(out.to_host_f32(), rout, {0, 0}, "naive out"));
  EXPECT_TRUE(testing::all_close(dq.to_host_f32(), rdq, {0, 0}, "naive dq"));
  EXPECT_TRUE(testing::all_close(dk.to_host_f32(), rdk, {0, 0}, "naive dk"));
  EXPECT_TRUE(testing::all_close(dv.to_host_f32(), rdv, {0, 0}, "naive dv"));

  attention_fused_forward(q, k, v, out, lse);
  attention_fused_backward(q, k, v, out, lse, d_out, dq, dk, dv);
  reference::fused_attention_forward(dims, qv.data(), kv.data(), vv.data(), rout.data(), rlse.data());
  reference::fused_attention_backward(dims, qv.data(), kv.data(), vv.data(), rout.data(), rlse.data(),
                                      dov.data(), rdq.data(), rdk.data(), rdv.data());
  EXPECT_TRUE(testing::all_close(out.to_host_f32(), rout, {0, 0}, "fused out"));
  EXPECT_TRUE(testing::all_close(lse.to_host_f32(), rlse, {0, 0}, "fused lse"));
  EXPECT_TRUE(testing::all_close(dq.to_host_f32(), rdq, {0, 0}, "fused dq"));
  EXPECT_TRUE(testing::all_close(dk.to_host_f32(), rdk, {0, 0}, "fused dk"));
  EXPECT_TRUE(testing::all_close(dv.to_host_f32(), rdv, {0, 0}, "fused dv"));
}

// Dry accepts Hkv < H and allocates the same scratch as for multi-head attention of q's shape:
// the scratch is per query head (dP/dS, delta, the dQ accumulator), never per K/V head.
TEST(AttentionDry, GroupedQueryScratchIsSizedByQueryHeads) {
  Device device(DeviceKind::dry, {});
  const Shape q_shape{1, 8, 128, 128}, kv_shape{1, 2, 128, 128};
  const DType bf16 = DType::bf16;
  Tensor q = Tensor::empty(device, q_shape, bf16), k = Tensor::empty(device, kv_shape, bf16);
  Tensor v = Tensor::empty(device, kv_shape, bf16), d_out = Tensor::empty(device, q_shape, bf16);
  Tensor out = Tensor::empty(device, q_shape, bf16), dq = Tensor::empty(device, q_shape, bf16);
  Tensor dk = Tensor::empty(device, kv_shape, bf16), dv = Tensor::empty(device, kv_shape, bf16);
  Tensor probs = Tensor::empty(device, attention_probs_shape(q), bf16);
  Tensor lse = Tensor::empty(device, attention_lse_shape(q), DType::f32);
  attention_naive_forward(q, k, v, probs, out);
  attention_fused_forward(q, k, v, out, lse);
  const auto before = device.allocator().stats().allocated.current;
  device.allocator().reset_peak_stats();
  attention_naive_backward(q, k, v, probs, d_out, dq, dk, dv);
  EXPECT_EQ(device.allocator().stats().allocated.peak - before,
            std::int64_t(attention_naive_backward_workspace_bytes(q)));
  device.allocator().reset_peak_stats();
  attention_fused_backward(q, k, v, out, lse, d_out, dq, dk, dv);
  EXPECT_EQ(device.allocator().stats().allocated.peak - before,
            std::int64_t(attention_fused_backward_workspace_bytes(q)));
  EXPECT_EQ(device.allocator().stats().allocated.current, before);
}

TEST(AttentionChecks, GroupedQueryShapesAreChecked) {
  for (DeviceKind kind : {DeviceKind::dry, DeviceKind::host}) {
    Device device(kind, {});
    const Shape q_shape{1, 4, 8, 64};
    Tensor q = Tensor::zeros(device, q_shape, DType::bf16), out = Tensor::zeros(device, q_shape, DType::bf16);
    Tensor probs = Tensor::zeros(device, attention_probs_shape(q), DType::bf16);
    Tensor lse = Tensor::zeros(device, attention_lse_shape(q), DType::f32);
    Tensor k2 = Tensor::zeros(device, {1, 2, 8, 64}, DType::bf16);
    Tensor k3 = Tensor::zeros(device, {1, 3, 8, 64}, DType::bf16);  // 3 does not divide 4
    Tensor k8 = Tensor::zeros(device, {1, 8, 8, 64}, DType::bf16);  // more K/V heads than queries
    Tensor k2_batch2 = Tensor::zeros(device, {2, 2, 8, 64}, DType::bf16);
    EXPECT_THROW(attention_fused_forward(q, k3, k3, out, lse), std::invalid_argument);
    EXPECT_THROW(attention_naive_forward(q, k8, k8, probs, out), std::invalid_argument);
    EXPECT_THROW(attention_naive_forward(q, k2_batch2, k2_batch2, probs, out), std::invalid_argument);
    EXPECT_THROW(attention_fused_forward(q, k2, q, out, lse), std::invalid_argument);  // v != k's shape
    // dk, dv must have k's shape, not q's.
    Tensor d_out = Tensor::zeros(device, q_shape, DType::bf16), dq = Tensor::zeros(device, q_shape, DType::bf16);
    Tensor dk_q = Tensor::zeros(device, q_shape, DType::bf16), dv2 = Tensor::zeros(device, {1, 2, 8, 64}, DType::bf16);
    EXPECT_THROW(attention_fused_backward(q, k2, k2, out, lse, d_out, dq, dk_q, dv2), std::invalid_argument);
    EXPECT_THROW(attention_naive_backward(q, k2, k2, probs, d_out, dq, dk_q, dv2), std::invalid_argument);
    EXPECT_NO_THROW(attention_fused_forward(q, k2, k2, out, lse));
  }
}

TEST(AttentionChecks, BadArgumentsThrowOnEveryDevice) {
  for (DeviceKind kind : {DeviceKind::dry, DeviceKind::host}) {
    Device device(kind, {});
    const Shape shape{1, 2, 8, 64};
    Tensor q = Tensor::zeros(device, shape, DType::bf16), k = Tensor::zeros(device, shape, DType::bf16);
    Tensor v = Tensor::zeros(device, shape, DType::bf16), out = Tensor::zeros(device, shape, DType::bf16);
    Tensor probs = Tensor::zeros(device, attention_probs_shape(q), DType::bf16);
    Tensor lse = Tensor::zeros(device, attention_lse_shape(q), DType::f32);

    Tensor short_k = Tensor::zeros(device, {1, 2, 7, 64}, DType::bf16);
    EXPECT_THROW(attention_naive_forward(q, short_k, v, probs, out), std::invalid_argument);
    EXPECT_THROW(attention_fused_forward(q, short_k, v, out, lse), std::invalid_argument);

    Tensor f16_v = Tensor::zeros(device, shape, DType::f16);
    EXPECT_THROW(attention_naive_forward(q, k, f16_v, probs, out), std::invalid_argument);

    Tensor wrong_probs = Tensor::zeros(device, {1, 2, 8, 7}, DType::bf16);
    EXPECT_THROW(attention_naive_forward(q, k, v, wrong_probs, out), std::invalid_argument);

    Tensor lse_bf16 = Tensor::zeros(device, attention_lse_shape(q), DType::bf16);
    EXPECT_THROW(attention_fused_forward(q, k, v, out, lse_bf16), std::invalid_argument);

    const Shape small_head{1, 2, 8, 32};
    Tensor q32 = Tensor::zeros(device, small_head, DType::bf16);
    Tensor out32 = Tensor::zeros(device, small_head, DType::bf16);
    Tensor lse32 = Tensor::zeros(device, attention_lse_shape(q32), DType::f32);
    EXPECT_THROW(attention_fused_forward(q32, q32, q32, out32, lse32), std::invalid_argument);

    Tensor three_d = Tensor::zeros(device, {2, 8, 64}, DType::bf16);
    EXPECT_THROW(attention_fused_forward(three_d, three_d, three_d, out, lse), std::invalid_argument);

    Tensor undefined;
    EXPECT_THROW(attention_naive_forward(q, undefined, v, probs, out), std::invalid_argument);
  }
}

// The fused path takes f32 only on host (its reference); dry predicts cuda, so it refuses f32.
TEST(AttentionChecks, FusedF32IsHostOnly) {
  const Shape shape{1, 1, 4, 64};
  Device dry(DeviceKind::dry, {});
  Tensor q = Tensor::empty(dry, shape, DType::f32), out = Tensor::empty(dry, shape, DType::f32);
  Tensor lse = Tensor::empty(dry, attention_lse_shape(q), DType::f32);
  EXPECT_THROW(attention_fused_forward(q, q, q, out, lse), std::invalid_argument);
  Device host(DeviceKind::host, {});
  Tensor hq = random_tensor(host, shape, DType::f32, 9), hout = Tensor::empty(host, shape, DType::f32);
  Tensor hlse = Tensor::empty(host, attention_lse_shape(hq), DType::f32);
  EXPECT_NO_THROW(attention_fused_forward(hq, hq, hq, hout, hlse));
}

}  // namespace
}  // namespace oomlab::ops
