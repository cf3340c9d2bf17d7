// The formulas of LeakyReLU and softplus, shared by the CPU references and the CUDA kernels so
// both compute exactly the same thing (in f32).
#pragma once
#include <cmath>

#include "kernels/core/host_device.hpp"

namespace oomlab::ops {

OOMLAB_HOST_DEVICE inline float leaky_relu_value(float x, float slope) { return x > 0.0f ? x : slope * x; }
// The gradient factor at x: 1 where x > 0, slope elsewhere (as PyTorch, 0 counts as negative).
OOMLAB_HOST_DEVICE inline float leaky_relu_grad(float x, float dy, float slope) {
  return x > 0.0f ? dy : slope * dy;
}

// log(1 + exp(x)) without overflow: exp of a non-positive number only.
OOMLAB_HOST_DEVICE inline float softplus_value(float x) {
  return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}
// d softplus / dx = sigmoid(x), again with exp of a non-positive number only.
OOMLAB_HOST_DEVICE inline float sigmoid_value(float x) {
  const float e = expf(-fabsf(x));
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

// d |a - b| / da: sign(a - b), 0 where a == b.
OOMLAB_HOST_DEVICE inline float l1_grad(float a, float b, float scale) {
  const float diff = a - b;
  return diff > 0.0f ? scale : diff < 0.0f ? -scale : 0.0f;
}

}  // namespace oomlab::ops
