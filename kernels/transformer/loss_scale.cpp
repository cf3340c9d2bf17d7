// Loss scaling: CPU reference and dispatch.
#include "kernels/transformer/loss_scale.hpp"

#include <cmath>

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::ops {

void scale(Tensor& t, float factor) {
  check_dtype("scale", "t", t, kFloatDtypes);
  switch (t.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::size_t i = 0; i < static_cast<std::size_t>(t.numel()); ++i) {
        store_value(t.data(), t.dtype(), i, load_as_float(t.data(), t.dtype(), i) * factor);
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::scale(t, factor, t.device().stream());
#endif
      throw_no_cuda("scale");
  }
}

void unscale_and_check(const std::vector<Tensor>& grads, float inv_scale, Tensor& found_inf) {
  check_shape("unscale_and_check", "found_inf", found_inf, {1});
  check_dtype("unscale_and_check", "found_inf", found_inf, {DType::f32});
  for (const Tensor& grad : grads) {
    check_dtype("unscale_and_check", "grad", grad, kFloatDtypes);
    check_same_device("unscale_and_check", {&grad, &found_inf});
  }
  found_inf.zero();
  switch (found_inf.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      bool any_inf = false;
      for (const Tensor& grad : grads) {
        for (std::size_t i = 0; i < static_cast<std::size_t>(grad.numel()); ++i) {
          float value = load_as_float(grad.data(), grad.dtype(), i) * inv_scale;
          any_inf = any_inf || !std::isfinite(value);
          store_value(grad.data(), grad.dtype(), i, value);
        }
      }
      found_inf.data_as<float>()[0] = any_inf ? 1.0f : 0.0f;
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      for (const Tensor& grad : grads) {
        Tensor target = grad;  // a handle: the kernel writes through it
        cuda::unscale_and_check(target, inv_scale, found_inf, found_inf.device().stream());
      }
      return;
#endif
      throw_no_cuda("unscale_and_check");
  }
}

bool read_found_inf(const Tensor& found_inf, bool dry_value) {
  check_shape("read_found_inf", "found_inf", found_inf, {1});
  if (found_inf.device().is_dry()) return dry_value;
  return found_inf.to_host_f32()[0] != 0.0f;
}

}  // namespace oomlab::ops
