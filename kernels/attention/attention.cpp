// Dispatch for causal attention (attention.hpp): argument checks on every device, scratch
// allocations identical on every device, then cuda kernels or the host references.
#include "kernels/attention/attention.hpp"

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "kernels/attention/attention_reference.hpp"
#include "kernels/core/check.hpp"
#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"
#if OOMLAB_WITH_CUDA
#include "kernels/attention/attention_cuda.hpp"
#endif

namespace oomlab::ops {
namespace {

// Query heads per K/V head (check_qkv has made sure it divides H).
std::int64_t group_of(const Tensor& q, const Tensor& k) { return q.dim(1) / k.dim(1); }

reference::AttentionDims dims_of(const Tensor& q, const Tensor& k) {
  return {q.dim(0) * q.dim(1), q.dim(2), q.dim(3), group_of(q, k)};
}

void check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  check_defined(op, "q", q);
  OOMLAB_CHECK(q.ndim() == 4, op << ": q must be (B, H, T, D), got " << q.describe());
  OOMLAB_CHECK(q.numel() > 0, op << ": q " << q.describe() << " is empty");
  check_defined(op, "k", k);
  // k is (B, Hkv, T, D) with Hkv dividing H (grouped-query attention; Hkv = H is MHA).
  const std::int64_t kv_heads = k.ndim() == 4 ? k.dim(1) : 0;
  OOMLAB_CHECK(kv_heads > 0 && q.dim(1) % kv_heads == 0,
               op << ": k is " << k.describe() << ", expected (B, Hkv, T, D) with Hkv dividing H = "
                  << q.dim(1));
  check_shape(op, "k", k, {q.dim(0), kv_heads, q.dim(2), q.dim(3)});
  check_shape(op, "v", v, k.shape());
  check_same_dtype(op, q, k);
  check_same_dtype(op, q, v);
  check_same_device(op, {&q, &k, &v});
  // The kernels index rows with int and launch B*H blocks along grid y.
  OOMLAB_CHECK(q.dim(2) <= (1 << 24) && q.dim(0) * q.dim(1) <= 65535,
               op << ": " << q.describe() << " exceeds T <= 2^24, B*H <= 65535");
}

// An output or saved tensor: given shape and dtype, on q's device.
void check_tensor(const char* op, const char* name, const Tensor& t, const Tensor& q,
                  const Shape& shape, DType dtype) {
  check_shape(op, name, t, shape);
  check_dtype(op, name, t, {dtype});
  check_same_device(op, {&q, &t});
}

void check_naive_dtype(const char* op, const Tensor& q) { check_dtype(op, "q", q, {DType::f32, DType::bf16}); }

void check_fused_dtype_and_dim(const char* op, const Tensor& q) {
  const bool host = q.device().kind() == DeviceKind::host;
  OOMLAB_CHECK(q.dtype() == DType::bf16 || (host && q.dtype() == DType::f32),
               op << ": dtype " << dtype_name(q.dtype()) << " on " << device_kind_name(q.device().kind())
                  << " (the fused kernel takes bf16; f32 only on host)");
  OOMLAB_CHECK(q.dim(3) == 64 || q.dim(3) == 128,
               op << ": head dim " << q.dim(3) << " is not 64 or 128");
}

#if OOMLAB_WITH_CUDA
cuda::AttentionShape cuda_shape(const Tensor& q, const Tensor& k) {
  return {q.dim(0) * q.dim(1), q.dim(2), q.dim(3), group_of(q, k)};
}

// cp.async and vector loads need 16-byte aligned rows; a slice at an odd offset would break that.
void check_aligned(const char* op, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    OOMLAB_CHECK(reinterpret_cast<std::uintptr_t>(t->data()) % 16 == 0,
                 op << ": " << t->describe() << " is not 16-byte aligned");
  }
}
#endif

std::vector<float> host_values(const Tensor& t) {
  std::vector<float> values(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = load_as_float(t.data(), t.dtype(), i);
  return values;
}

void store_host_values(Tensor& t, const std::vector<float>& values) {
  for (std::size_t i = 0; i < values.size(); ++i) store_value(t.data(), t.dtype(), i, values[i]);
}

}  // namespace

Shape attention_probs_shape(const Tensor& q) {
  OOMLAB_CHECK(q.ndim() == 4, "attention_probs_shape: q must be (B, H, T, D), got "
                                  << shape_string(q.shape()));
  return {q.dim(0), q.dim(1), q.dim(2), q.dim(2)};
}

Shape attention_lse_shape(const Tensor& q) {
  OOMLAB_CHECK(q.ndim() == 4, "attention_lse_shape: q must be (B, H, T, D), got "
                                  << shape_string(q.shape()));
  return {q.dim(0), q.dim(1), q.dim(2)};
}

std::size_t attention_naive_backward_workspace_bytes(const Tensor& q) {
  return static_cast<std::size_t>(shape_numel(attention_probs_shape(q))) * dtype_size(q.dtype());
}

std::size_t attention_fused_backward_workspace_bytes(const Tensor& q) {
  // delta (B, H, T) f32 + dQ accumulator (B, H, T, D) f32
  return static_cast<std::size_t>(shape_numel(attention_lse_shape(q)) + q.numel()) * sizeof(float);
}

void attention_naive_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& probs,
                             Tensor& out) {
  constexpr const char* op = "attention_naive_forward";
  check_qkv(op, q, k, v);
  check_naive_dtype(op, q);
  check_tensor(op, "probs", probs, q, attention_probs_shape(q), q.dtype());
  check_tensor(op, "out", out, q, q.shape(), q.dtype());
  Device& device = q.device();
  if (device.is_dry()) return;
  if (device.is_cuda()) {
#if OOMLAB_WITH_CUDA
    cuda::naive_attention_forward(cuda_shape(q, k), q.dtype() == DType::bf16, q.data(), k.data(),
                                  v.data(), probs.data(), out.data(), device.stream());
    return;
#else
    throw_no_cuda(op);
#endif
  }
  const auto qv = host_values(q), kv = host_values(k), vv = host_values(v);
  std::vector<float> pv(static_cast<std::size_t>(probs.numel())), ov(qv.size());
  reference::naive_attention_forward(dims_of(q, k), qv.data(), kv.data(), vv.data(), pv.data(),
                                     ov.data());
  store_host_values(probs, pv);
  store_host_values(out, ov);
}

void attention_naive_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& probs, const Tensor& d_out, Tensor& dq, Tensor& dk,
                              Tensor& dv) {
  constexpr const char* op = "attention_naive_backward";
  check_qkv(op, q, k, v);
  check_naive_dtype(op, q);
  check_tensor(op, "probs", probs, q, attention_probs_shape(q), q.dtype());
  check_tensor(op, "d_out", d_out, q, q.shape(), q.dtype());
  check_tensor(op, "dq", dq, q, q.shape(), q.dtype());
  check_tensor(op, "dk", dk, q, k.shape(), q.dtype());
  check_tensor(op, "dv", dv, q, k.shape(), q.dtype());
  Device& device = q.device();
  // dP, then dS in place: allocated on every device so dry predicts cuda's peak exactly.
  Tensor workspace =
      Tensor::empty(device, attention_probs_shape(q), q.dtype(), memory::Tag::workspace);
  if (device.is_dry()) return;
  if (device.is_cuda()) {
#if OOMLAB_WITH_CUDA
    cuda::naive_attention_backward(cuda_shape(q, k), q.dtype() == DType::bf16, q.data(), k.data(),
                                   v.data(), probs.data(), d_out.data(), workspace.data(),
                                   dq.data(), dk.data(), dv.data(), device.stream());
    return;
#else
    throw_no_cuda(op);
#endif
  }
  const auto qv = host_values(q), kv = host_values(k), vv = host_values(v);
  const auto pv = host_values(probs), dov = host_values(d_out);
  std::vector<float> dqv(qv.size()), dkv(kv.size()), dvv(kv.size());
  reference::naive_attention_backward(dims_of(q, k), qv.data(), kv.data(), vv.data(), pv.data(),
                                      dov.data(), dqv.data(), dkv.data(), dvv.data());
  store_host_values(dq, dqv);
  store_host_values(dk, dkv);
  store_host_values(dv, dvv);
}

void attention_fused_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out,
                             Tensor& lse) {
  constexpr const char* op = "attention_fused_forward";
  check_qkv(op, q, k, v);
  check_fused_dtype_and_dim(op, q);
  check_tensor(op, "out", out, q, q.shape(), q.dtype());
  check_tensor(op, "lse", lse, q, attention_lse_shape(q), DType::f32);
  Device& device = q.device();
  if (device.is_dry()) return;
  if (device.is_cuda()) {
#if OOMLAB_WITH_CUDA
    check_aligned(op, {&q, &k, &v, &out});
    cuda::fused_attention_forward(cuda_shape(q, k), q.data(), k.data(), v.data(), out.data(),
                                  lse.data_as<float>(), device.stream());
    return;
#else
    throw_no_cuda(op);
#endif
  }
  const auto qv = host_values(q), kv = host_values(k), vv = host_values(v);
  std::vector<float> ov(qv.size());
  reference::fused_attention_forward(dims_of(q, k), qv.data(), kv.data(), vv.data(), ov.data(),
                                     lse.data_as<float>());
  store_host_values(out, ov);
}

void attention_fused_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                              const Tensor& lse, const Tensor& d_out, Tensor& dq, Tensor& dk,
                              Tensor& dv) {
  constexpr const char* op = "attention_fused_backward";
  check_qkv(op, q, k, v);
  check_fused_dtype_and_dim(op, q);
  check_tensor(op, "out", out, q, q.shape(), q.dtype());
  check_tensor(op, "lse", lse, q, attention_lse_shape(q), DType::f32);
  check_tensor(op, "d_out", d_out, q, q.shape(), q.dtype());
  check_tensor(op, "dq", dq, q, q.shape(), q.dtype());
  check_tensor(op, "dk", dk, q, k.shape(), q.dtype());
  check_tensor(op, "dv", dv, q, k.shape(), q.dtype());
  Device& device = q.device();
  // Scratch linear in T, allocated on every device so dry predicts cuda's peak exactly.
  Tensor delta = Tensor::empty(device, attention_lse_shape(q), DType::f32, memory::Tag::workspace);
  Tensor dq_accum = Tensor::empty(device, q.shape(), DType::f32, memory::Tag::workspace);
  if (device.is_dry()) return;
  if (device.is_cuda()) {
#if OOMLAB_WITH_CUDA
    check_aligned(op, {&q, &k, &v, &out, &d_out, &dq, &dk, &dv});
    cuda::fused_attention_backward(cuda_shape(q, k), q.data(), k.data(), v.data(), out.data(),
                                   lse.data_as<float>(), d_out.data(), delta.data_as<float>(),
                                   dq_accum.data_as<float>(), dq.data(), dk.data(), dv.data(),
                                   device.stream());
    return;
#else
    throw_no_cuda(op);
#endif
  }
  const auto qv = host_values(q), kv = host_values(k), vv = host_values(v);
  const auto ov = host_values(out), dov = host_values(d_out);
  std::vector<float> dqv(qv.size()), dkv(kv.size()), dvv(kv.size());
  reference::fused_attention_backward(dims_of(q, k), qv.data(), kv.data(), vv.data(), ov.data(),
                                      lse.data_as<float>(), dov.data(), dqv.data(), dkv.data(),
                                      dvv.data());
  store_host_values(dq, dqv);
  store_host_values(dk, dkv);
  store_host_values(dv, dvv);
}

}  // namespace oomlab::ops
