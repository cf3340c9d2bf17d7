// Softplus: CPU reference and dispatch on the device.
#include "kernels/conv/softplus.hpp"

#include "kernels/conv/activation_math.hpp"
#include "kernels/conv/elementwise_checks.hpp"
#include "kernels/conv/softplus_launch.hpp"
#include "kernels/core/host_values.hpp"

namespace oomlab::ops {

void softplus_forward(const Tensor& x, const Tensor& y) {
  const char* op = "softplus_forward";
  detail::check_elementwise(op, "x", x, {{"y", &y}});
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::int64_t i = 0; i < x.numel(); ++i) {
        store_value(y.data(), y.dtype(), i, softplus_value(load_as_float(x.data(), x.dtype(), i)));
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return detail::softplus_forward_cuda(x.dtype(), x.data(), y.data(), x.numel(), x.device().stream());
#endif
      throw_no_cuda(op);
  }
}

void softplus_backward(const Tensor& x, const Tensor& dy, const Tensor& dx) {
  const char* op = "softplus_backward";
  detail::check_elementwise(op, "x", x, {{"dy", &dy}, {"dx", &dx}});
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::int64_t i = 0; i < x.numel(); ++i) {
        store_value(dx.data(), dx.dtype(), i,
                    load_as_float(dy.data(), dy.dtype(), i) *
                        sigmoid_value(load_as_float(x.data(), x.dtype(), i)));
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return detail::softplus_backward_cuda(x.dtype(), x.data(), dy.data(), dx.data(), x.numel(),
                                            x.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
