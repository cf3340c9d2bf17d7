// Residual add: CPU reference and dispatch.
#include "kernels/core/residual.hpp"

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::ops {

void residual_add(Tensor& out, const Tensor& a, const Tensor& b) {
  check_dtype("residual_add", "a", a, kFloatDtypes);
  check_shape("residual_add", "b", b, a.shape());
  check_shape("residual_add", "out", out, a.shape());
  check_same_dtype("residual_add", a, b);
  check_same_dtype("residual_add", out, a);
  check_same_device("residual_add", {&out, &a, &b});
  switch (a.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::size_t i = 0; i < static_cast<std::size_t>(a.numel()); ++i) {
        store_value(out.data(), out.dtype(), i,
                    load_as_float(a.data(), a.dtype(), i) + load_as_float(b.data(), b.dtype(), i));
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::residual_add(out, a, b, a.device().stream());
#endif
      throw_no_cuda("residual_add");
  }
}

}  // namespace oomlab::ops
