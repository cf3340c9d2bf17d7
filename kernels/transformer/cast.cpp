// Casts: CPU reference and dispatch.
#include "kernels/transformer/cast.hpp"

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::ops {

void cast(Tensor& out, const Tensor& in) {
  check_dtype("cast", "in", in, kFloatDtypes);
  check_dtype("cast", "out", out, kFloatDtypes);
  OOMLAB_CHECK(out.numel() == in.numel(),
               "cast: " << in.describe() << " into " << out.describe() << " (numel differs)");
  check_same_device("cast", {&out, &in});
  switch (in.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::size_t i = 0; i < static_cast<std::size_t>(in.numel()); ++i) {
        store_value(out.data(), out.dtype(), i, load_as_float(in.data(), in.dtype(), i));
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::cast(out, in, in.device().stream());
#endif
      throw_no_cuda("cast");
  }
}

}  // namespace oomlab::ops
