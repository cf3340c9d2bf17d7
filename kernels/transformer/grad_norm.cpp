// Global grad norm and clipping: CPU reference (f64, in order) and dispatch.
#include "kernels/transformer/grad_norm.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::ops {

namespace {

void check_grads(const char* op, const std::vector<Tensor>& grads, const Tensor& norm) {
  check_shape(op, "norm", norm, {1});
  check_dtype(op, "norm", norm, {DType::f32});
  for (const Tensor& grad : grads) {
    check_dtype(op, "grad", grad, {DType::f32, DType::bf16, DType::f16});
    check_same_device(op, {&grad, &norm});
  }
}

}  // namespace

void global_grad_norm(Tensor& norm, const std::vector<Tensor>& grads) {
  const char* op = "global_grad_norm";
  check_grads(op, grads, norm);
  Device& device = norm.device();
  switch (device.kind()) {
    case DeviceKind::dry:
    case DeviceKind::cuda: {
      // The scratch is requested on dry too, so the allocation sequence matches cuda.
      Tensor partials = Tensor::empty(
          device, {static_cast<std::int64_t>(std::max<std::size_t>(grads.size(), 1)) * kGradNormBlocks},
          DType::f32, memory::Tag::workspace);
      if (device.is_dry()) return;
#if OOMLAB_WITH_CUDA
      return cuda::global_grad_norm(norm, grads, partials, device.stream());
#endif
      throw_no_cuda(op);
    }
    case DeviceKind::host: {
      Tensor partials = Tensor::empty(
          device, {static_cast<std::int64_t>(std::max<std::size_t>(grads.size(), 1)) * kGradNormBlocks},
          DType::f32, memory::Tag::workspace);  // unused on host; keeps the request sequence
      double sum = 0;
      for (const Tensor& grad : grads) {
        for (std::size_t i = 0; i < static_cast<std::size_t>(grad.numel()); ++i) {
          double g = load_as_float(grad.data(), grad.dtype(), i);
          sum += g * g;
        }
      }
      norm.data_as<float>()[0] = static_cast<float>(std::sqrt(sum));
      return;
    }
  }
}

void clip_grads_by_norm(const std::vector<Tensor>& grads, const Tensor& norm, float max_norm) {
  const char* op = "clip_grads_by_norm";
  check_grads(op, grads, norm);
  switch (norm.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      float factor = std::min(1.0f, max_norm / (norm.data_as<float>()[0] + 1e-6f));
      for (const Tensor& grad : grads) {
        for (std::size_t i = 0; i < static_cast<std::size_t>(grad.numel()); ++i) {
          store_value(grad.data(), grad.dtype(), i, load_as_float(grad.data(), grad.dtype(), i) * factor);
        }
      }
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::clip_grads(grads, norm, max_norm, norm.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
