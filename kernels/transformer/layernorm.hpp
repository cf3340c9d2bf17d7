// LayerNorm over the last dimension: out = (x - mean) * rstd * weight + bias, with
// rstd = 1 / sqrt(var + eps) (biased variance). The forward saves mean and rstd per row for
// the backward, as llm.c does, instead of recomputing them.
#pragma once
#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// x, out: (..., C) float dtype; weight, bias: (C) same dtype; mean, rstd: (rows) f32.
void layernorm_forward(Tensor& out, Tensor& mean, Tensor& rstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, float eps = 1e-5f);
// dx (overwritten, x's shape and dtype); dweight, dbias: (C) f32, ACCUMULATED (+=) like every
// parameter gradient, so micro-batches add up; zero them at the start of a step. residual (x's
// shape and dtype, or undefined) is added to dx as it is written: the gradient that reaches the
// norm's input through the skip connection, without a pass of its own.
void layernorm_backward(Tensor& dx, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                        const Tensor& x, const Tensor& weight, const Tensor& mean,
                        const Tensor& rstd, const Tensor& residual = Tensor());

namespace cuda {
void layernorm_forward(Tensor& out, Tensor& mean, Tensor& rstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, float eps,
                       memory::StreamHandle stream);
void layernorm_backward(Tensor& dx, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                        const Tensor& x, const Tensor& weight, const Tensor& mean,
                        const Tensor& rstd, const Tensor& residual, memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
