// SiLU and its derivative, shared by the CPU reference and the CUDA kernels.
#pragma once
#include <cmath>

#include "kernels/core/host_device.hpp"

namespace oomlab::ops {

OOMLAB_HOST_DEVICE inline float sigmoid_value(float x) { return 1.0f / (1.0f + expf(-x)); }
OOMLAB_HOST_DEVICE inline float silu_value(float x) { return x * sigmoid_value(x); }
OOMLAB_HOST_DEVICE inline float silu_derivative(float x) {
  float s = sigmoid_value(x);
  return s * (1.0f + x * (1.0f - s));
}

}  // namespace oomlab::ops
