// Parameter initialisation: CPU reference and dispatch.
#include "kernels/transformer/init_normal.hpp"

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"
#include "kernels/transformer/init_normal_math.hpp"

namespace oomlab::ops {

void fill_normal(Tensor& out, std::uint64_t seed, float stddev, std::uint64_t first_index) {
  check_dtype("fill_normal", "out", out, kFloatDtypes);
  switch (out.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::size_t i = 0; i < static_cast<std::size_t>(out.numel()); ++i) {
        store_value(out.data(), out.dtype(), i, stddev * normal_at(seed, first_index + i));
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::fill_normal(out, seed, stddev, first_index, out.device().stream());
#endif
      throw_no_cuda("fill_normal");
  }
}

}  // namespace oomlab::ops
