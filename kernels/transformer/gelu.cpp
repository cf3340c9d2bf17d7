// GELU: CPU reference and dispatch.
#include "kernels/transformer/gelu.hpp"

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"
#include "kernels/transformer/gelu_math.hpp"

namespace oomlab::ops {

void gelu_forward(Tensor& out, const Tensor& x) {
  check_dtype("gelu_forward", "x", x, kFloatDtypes);
  check_shape("gelu_forward", "out", out, x.shape());
  check_same_dtype("gelu_forward", out, x);
  check_same_device("gelu_forward", {&out, &x});
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::size_t i = 0; i < static_cast<std::size_t>(x.numel()); ++i) {
        store_value(out.data(), out.dtype(), i, gelu_value(load_as_float(x.data(), x.dtype(), i)));
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::gelu_forward(out, x, x.device().stream());
#endif
      throw_no_cuda("gelu_forward");
  }
}

void gelu_backward(Tensor& dx, const Tensor& dout, const Tensor& x) {
  check_dtype("gelu_backward", "x", x, kFloatDtypes);
  check_shape("gelu_backward", "dout", dout, x.shape());
  check_shape("gelu_backward", "dx", dx, x.shape());
  check_same_dtype("gelu_backward", dout, x);
  check_same_dtype("gelu_backward", dx, x);
  check_same_device("gelu_backward", {&dx, &dout, &x});
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::size_t i = 0; i < static_cast<std::size_t>(x.numel()); ++i) {
        float grad = load_as_float(dout.data(), dout.dtype(), i) *
                     gelu_derivative(load_as_float(x.data(), x.dtype(), i));
        store_value(dx.data(), dx.dtype(), i, grad);
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::gelu_backward(dx, dout, x, x.device().stream());
#endif
      throw_no_cuda("gelu_backward");
  }
}

}  // namespace oomlab::ops
