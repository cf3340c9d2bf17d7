// RoPE: CPU reference and dispatch.
#include "kernels/transformer/rope.hpp"

#include <stdexcept>
#include <string>

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::ops {
namespace {

void rope_rotate(const char* op, Tensor& x, float base, bool inverse) {
  check_dtype(op, "x", x, kFloatDtypes);
  if (x.shape().size() != 4 || x.shape()[3] % 2 != 0) {
    throw std::invalid_argument(std::string(op) + ": x must be (B, H, T, D) with an even D, got " +
                                shape_string(x.shape()));
  }
  if (!(base > 1.0f)) throw std::invalid_argument(std::string(op) + ": the base must be above 1");
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      const std::int64_t seq = x.shape()[2], dim = x.shape()[3], half = dim / 2;
      const std::int64_t rows = x.numel() / dim;
      for (std::int64_t row = 0; row < rows; ++row) {
        const std::int64_t t = row % seq;
        const std::size_t start = static_cast<std::size_t>(row * dim);
        for (std::int64_t i = 0; i < half; ++i) {
          const std::size_t a = start + static_cast<std::size_t>(i), b = a + static_cast<std::size_t>(half);
          float first = load_as_float(x.data(), x.dtype(), a), second = load_as_float(x.data(), x.dtype(), b);
          rope_rotate_pair(first, second, rope_angle(t, static_cast<int>(i), static_cast<int>(dim), base), inverse);
          store_value(x.data(), x.dtype(), a, first);
          store_value(x.data(), x.dtype(), b, second);
        }
      }
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::rope_rotate(x, base, inverse, x.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace

void rope_forward(Tensor& x, float base) { rope_rotate("rope_forward", x, base, false); }
void rope_backward(Tensor& dx, float base) { rope_rotate("rope_backward", dx, base, true); }

}  // namespace oomlab::ops
