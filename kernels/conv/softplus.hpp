// Softplus, forward and backward (any shape; f32 or bf16): the GAN losses are
// mean(softplus(-D(real))) + mean(softplus(D(fake))). Numerically stable for any x:
// softplus(x) = max(x, 0) + log1p(exp(-|x|)), never exp of a large positive number.
#pragma once
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// y = log(1 + exp(x))
void softplus_forward(const Tensor& x, const Tensor& y);
// dx = dy * sigmoid(x), x the forward's input.
void softplus_backward(const Tensor& x, const Tensor& dy, const Tensor& dx);

}  // namespace oomlab::ops
