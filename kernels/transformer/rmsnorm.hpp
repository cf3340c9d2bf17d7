// RMSNorm over the last dimension (LLaMA): out = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps).
// The forward saves rstd per row for the backward.
#pragma once
#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// x, out: (..., C) float dtype; weight: (C) same dtype; rstd: (rows) f32.
void rmsnorm_forward(Tensor& out, Tensor& rstd, const Tensor& x, const Tensor& weight,
                     float eps = 1e-5f);
// dx overwritten; dweight: (C) f32, ACCUMULATED (+=) like every parameter gradient.
// residual: added to dx as it is written, or undefined (as layernorm_backward's).
void rmsnorm_backward(Tensor& dx, Tensor& dweight, const Tensor& dout, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const Tensor& residual = Tensor());

namespace cuda {
void rmsnorm_forward(Tensor& out, Tensor& rstd, const Tensor& x, const Tensor& weight, float eps,
                     memory::StreamHandle stream);
void rmsnorm_backward(Tensor& dx, Tensor& dweight, const Tensor& dout, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const Tensor& residual,
                      memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
