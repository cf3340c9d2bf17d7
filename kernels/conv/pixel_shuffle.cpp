// Pixel shuffle: shape rules, CPU reference and dispatch on the device.
#include "kernels/conv/pixel_shuffle.hpp"

#include <cstring>

#include "kernels/core/op_checks.hpp"
#include "kernels/conv/pixel_shuffle_launch.hpp"

namespace oomlab::ops {

Shape pixel_shuffle_output_shape(const Shape& x, int factor) {
  OOMLAB_CHECK(factor >= 1, "pixel_shuffle: factor must be >= 1, got " << factor);
  OOMLAB_CHECK(x.size() == 4, "pixel_shuffle: x must be NHWC (4 dims), got " << shape_string(x));
  const std::int64_t rr = static_cast<std::int64_t>(factor) * factor;
  OOMLAB_CHECK(x[3] % rr == 0, "pixel_shuffle: channels of " << shape_string(x)
                                   << " are not a multiple of factor^2 = " << rr);
  return {x[0], x[1] * factor, x[2] * factor, x[3] / rr};
}

namespace {

// Checks low (N, H, W, C*r*r) against high (N, H*r, W*r, C) and returns the geometry.
detail::PixelShuffleGeometry checked_geometry(const Tensor& low, const Tensor& high, int factor,
                                              const char* op) {
  check_dtype(op, "low-resolution tensor", low, kFloatDtypes);
  check_defined(op, "high-resolution tensor", high);
  check_same_dtype(op, low, high);
  check_same_device(op, {&low, &high});
  const Shape expected = pixel_shuffle_output_shape(low.shape(), factor);
  OOMLAB_CHECK(high.shape() == expected, op << ": " << high.describe() << " should have shape "
                                            << shape_string(expected) << " for "
                                            << low.describe() << " and factor " << factor);
  OOMLAB_CHECK(low.numel() == 0 || low.data() != high.data(),
               op << ": input and output share storage; a permutation cannot run in place");
  return {low.dim(0), low.dim(1), low.dim(2), high.dim(3), factor};
}

// The host reference: moves every element of the low side to or from its high-side place.
void shuffle_on_host(const detail::PixelShuffleGeometry& g, bool forward, const Tensor& low,
                     const Tensor& high) {
  const std::size_t element = dtype_size(low.dtype());
  auto* low_bytes = static_cast<unsigned char*>(low.data());
  auto* high_bytes = static_cast<unsigned char*>(high.data());
  const std::int64_t r = g.factor;
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t h = 0; h < g.h; ++h)
      for (std::int64_t w = 0; w < g.w; ++w)
        for (std::int64_t c = 0; c < g.c; ++c)
          for (std::int64_t i = 0; i < r; ++i)
            for (std::int64_t j = 0; j < r; ++j) {
              const std::int64_t low_index = ((n * g.h + h) * g.w + w) * (g.c * r * r) + (c * r + i) * r + j;
              const std::int64_t high_index = ((n * g.h * r + h * r + i) * (g.w * r) + w * r + j) * g.c + c;
              unsigned char* lo = low_bytes + low_index * element;
              unsigned char* hi = high_bytes + high_index * element;
              if (forward) {
                std::memcpy(hi, lo, element);
              } else {
                std::memcpy(lo, hi, element);
              }
            }
}

void run(const Tensor& low, const Tensor& high, int factor, bool forward, const char* op) {
  const detail::PixelShuffleGeometry g = checked_geometry(low, high, factor, op);
  switch (low.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: shuffle_on_host(g, forward, low, high); return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return detail::pixel_shuffle_cuda(low.dtype(), g, forward, forward ? low.data() : high.data(),
                                        forward ? high.data() : low.data(), low.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace

void pixel_shuffle_forward(const Tensor& x, const Tensor& y, int factor) {
  run(x, y, factor, true, "pixel_shuffle_forward");
}

void pixel_shuffle_backward(const Tensor& dy, const Tensor& dx, int factor) {
  run(dx, dy, factor, false, "pixel_shuffle_backward");
}

}  // namespace oomlab::ops
