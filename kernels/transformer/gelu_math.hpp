// GELU (tanh) and its derivative, shared by the CPU reference and the CUDA kernels so both
// compute the same formula.
#pragma once
#include <cmath>

#include "kernels/core/host_device.hpp"

namespace oomlab::ops {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

OOMLAB_HOST_DEVICE inline float gelu_value(float x) {
  float u = kGeluScale * (x + kGeluCubic * x * x * x);
  return 0.5f * x * (1.0f + tanhf(u));
}

OOMLAB_HOST_DEVICE inline float gelu_derivative(float x) {
  float u = kGeluScale * (x + kGeluCubic * x * x * x);
  float t = tanhf(u);
  float du = kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

}  // namespace oomlab::ops
