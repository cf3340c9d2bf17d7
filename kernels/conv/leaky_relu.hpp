// ReLU and LeakyReLU, forward and backward (any shape; f32 or bf16). ReLU is LeakyReLU with
// slope 0. y may alias x and dx may alias dy (the ops are element-wise).
#pragma once
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// y = x > 0 ? x : slope * x
void leaky_relu_forward(const Tensor& x, const Tensor& y, float slope);
// dx = dy * (x > 0 ? 1 : slope). `x_or_y` is the forward's input, or its output: for
// slope >= 0 both have the same sign, so a caller may free the input and keep only y.
void leaky_relu_backward(const Tensor& x_or_y, const Tensor& dy, const Tensor& dx, float slope);

inline void relu_forward(const Tensor& x, const Tensor& y) { leaky_relu_forward(x, y, 0.0f); }
inline void relu_backward(const Tensor& x_or_y, const Tensor& dy, const Tensor& dx) {
  leaky_relu_backward(x_or_y, dy, dx, 0.0f);
}

}  // namespace oomlab::ops
