// Pixel shuffle (sub-pixel upsampling), channels-last (NHWC, see conv2d.hpp), forward and
// backward; f32 or bf16. With factor r: x (N, H, W, C*r*r) -> y (N, H*r, W*r, C) and
//   y[n, h*r + i, w*r + j, c] = x[n, h, w, c*r*r + i*r + j]
// which is PyTorch's channel order, so weights trained there mean the same thing here. Both
// directions are pure permutations: exact in any dtype.
#pragma once
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

Shape pixel_shuffle_output_shape(const Shape& x, int factor);

void pixel_shuffle_forward(const Tensor& x, const Tensor& y, int factor = 2);
// dx (N, H, W, C*r*r) from dy (N, H*r, W*r, C): the inverse permutation (pixel unshuffle).
void pixel_shuffle_backward(const Tensor& dy, const Tensor& dx, int factor = 2);

}  // namespace oomlab::ops
