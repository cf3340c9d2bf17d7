// The int8 absmax rule, shared by the CPU reference and the CUDA kernel so both round alike.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/core/host_device.hpp"

namespace oomlab::ops {

OOMLAB_HOST_DEVICE inline float int8_scale_from_absmax(float absmax) { return absmax / 127.0f; }
// Multiplier applied before rounding (0 for an all-zero row).
OOMLAB_HOST_DEVICE inline float int8_inverse_scale(float absmax) {
  return absmax > 0.0f ? 127.0f / absmax : 0.0f;
}
OOMLAB_HOST_DEVICE inline std::int8_t quantize_int8(float x, float inverse_scale) {
  float q = rintf(x * inverse_scale);  // half to even
  q = fminf(fmaxf(q, -127.0f), 127.0f);
  return static_cast<std::int8_t>(q);
}

}  // namespace oomlab::ops
