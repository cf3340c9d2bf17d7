// SwiGLU: CPU reference and dispatch.
#include "kernels/transformer/swiglu.hpp"

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"
#include "kernels/transformer/swiglu_math.hpp"

namespace oomlab::ops {

void swiglu_forward(Tensor& out, const Tensor& gate, const Tensor& up) {
  check_dtype("swiglu_forward", "gate", gate, kFloatDtypes);
  check_shape("swiglu_forward", "up", up, gate.shape());
  check_shape("swiglu_forward", "out", out, gate.shape());
  check_same_dtype("swiglu_forward", up, gate);
  check_same_dtype("swiglu_forward", out, gate);
  check_same_device("swiglu_forward", {&out, &gate, &up});
  switch (gate.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::size_t i = 0; i < static_cast<std::size_t>(gate.numel()); ++i) {
        float g = load_as_float(gate.data(), gate.dtype(), i);
        float u = load_as_float(up.data(), up.dtype(), i);
        store_value(out.data(), out.dtype(), i, silu_value(g) * u);
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::swiglu_forward(out, gate, up, gate.device().stream());
#endif
      throw_no_cuda("swiglu_forward");
  }
}

void swiglu_backward(Tensor& dgate, Tensor& dup, const Tensor& dout, const Tensor& gate,
                     const Tensor& up) {
  check_dtype("swiglu_backward", "gate", gate, kFloatDtypes);
  for (const Tensor* t : std::initializer_list<const Tensor*>{&up, &dout, &dgate, &dup}) {
    check_shape("swiglu_backward", "tensor", *t, gate.shape());
    check_same_dtype("swiglu_backward", *t, gate);
  }
  check_same_device("swiglu_backward", {&dgate, &dup, &dout, &gate, &up});
  switch (gate.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::size_t i = 0; i < static_cast<std::size_t>(gate.numel()); ++i) {
        float g = load_as_float(gate.data(), gate.dtype(), i);
        float u = load_as_float(up.data(), up.dtype(), i);
        float d = load_as_float(dout.data(), dout.dtype(), i);
        store_value(dgate.data(), dgate.dtype(), i, d * u * silu_derivative(g));
        store_value(dup.data(), dup.dtype(), i, d * silu_value(g));
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::swiglu_backward(dgate, dup, dout, gate, up, gate.device().stream());
#endif
      throw_no_cuda("swiglu_backward");
  }
}

}  // namespace oomlab::ops
