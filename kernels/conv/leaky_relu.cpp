// LeakyReLU: CPU reference and dispatch on the device.
#include "kernels/conv/leaky_relu.hpp"

#include "kernels/conv/activation_math.hpp"
#include "kernels/conv/elementwise_checks.hpp"
#include "kernels/conv/leaky_relu_launch.hpp"
#include "kernels/core/host_values.hpp"

namespace oomlab::ops {

void leaky_relu_forward(const Tensor& x, const Tensor& y, float slope) {
  const char* op = "leaky_relu_forward";
  detail::check_elementwise(op, "x", x, {{"y", &y}});
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::int64_t i = 0; i < x.numel(); ++i) {
        store_value(y.data(), y.dtype(), i, leaky_relu_value(load_as_float(x.data(), x.dtype(), i), slope));
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return detail::leaky_relu_forward_cuda(x.dtype(), x.data(), y.data(), x.numel(), slope,
                                             x.device().stream());
#endif
      throw_no_cuda(op);
  }
}

void leaky_relu_backward(const Tensor& x_or_y, const Tensor& dy, const Tensor& dx, float slope) {
  const char* op = "leaky_relu_backward";
  detail::check_elementwise(op, "x_or_y", x_or_y, {{"dy", &dy}, {"dx", &dx}});
  switch (dy.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::int64_t i = 0; i < dy.numel(); ++i) {
        store_value(dx.data(), dx.dtype(), i,
                    leaky_relu_grad(load_as_float(x_or_y.data(), x_or_y.dtype(), i),
                                    load_as_float(dy.data(), dy.dtype(), i), slope));
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return detail::leaky_relu_backward_cuda(dy.dtype(), x_or_y.data(), dy.data(), dx.data(),
                                              dy.numel(), slope, dy.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
