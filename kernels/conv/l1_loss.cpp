// L1 loss: CPU reference (f64 accumulation) and dispatch on the device.
#include "kernels/conv/l1_loss.hpp"

#include <cmath>
#include <limits>

#include "kernels/conv/l1_loss_launch.hpp"
#include "kernels/conv/activation_math.hpp"
#include "kernels/conv/elementwise_checks.hpp"
#include "kernels/conv/reduce_launch.hpp"
#include "kernels/core/host_values.hpp"

namespace oomlab::ops {

void l1_loss_forward(const Tensor& a, const Tensor& b, const Tensor& loss) {
  const char* op = "l1_loss_forward";
  detail::check_elementwise(op, "a", a, {{"b", &b}});
  detail::check_scalar_output(op, loss, a);
  const std::int64_t count = a.numel();
  Tensor partials = Tensor::empty(a.device(), {detail::plan_sum(count).count}, DType::f32,
                                  memory::Tag::workspace);
  switch (a.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      double total = 0;
      for (std::int64_t i = 0; i < count; ++i) {
        total += std::fabs(double(load_as_float(a.data(), a.dtype(), i)) -
                           double(load_as_float(b.data(), b.dtype(), i)));
      }
      store_value(loss.data(), DType::f32, 0,
                  count > 0 ? total / count : std::numeric_limits<double>::quiet_NaN());
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return detail::l1_loss_forward_cuda(a.dtype(), a.data(), b.data(), count,
                                          partials.data_as<float>(), loss.data_as<float>(),
                                          a.device().stream());
#endif
      throw_no_cuda(op);
  }
}

void l1_loss_backward(const Tensor& a, const Tensor& b, float grad_loss, const Tensor& da,
                      const Tensor& db) {
  const char* op = "l1_loss_backward";
  detail::check_elementwise(op, "a", a, {{"b", &b}, {"da", &da}});
  if (db.defined()) detail::check_elementwise(op, "a", a, {{"db", &db}});
  const std::int64_t count = a.numel();
  if (count == 0) return;
  const float scale = grad_loss / static_cast<float>(count);
  switch (a.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::int64_t i = 0; i < count; ++i) {
        const float g = l1_grad(load_as_float(a.data(), a.dtype(), i),
                                load_as_float(b.data(), b.dtype(), i), scale);
        store_value(da.data(), da.dtype(), i, g);
        if (db.defined()) store_value(db.data(), db.dtype(), i, -g);
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return detail::l1_loss_backward_cuda(a.dtype(), a.data(), b.data(), count, scale, da.data(),
                                           db.defined() ? db.data() : nullptr, a.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
