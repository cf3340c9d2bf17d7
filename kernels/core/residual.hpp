// Residual add: out = a + b, element-wise (the skip connection of every transformer block).
#pragma once
#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// out, a, b share shape and dtype (f32, bf16, f16); out may alias a or b.
// Backward needs no op: the gradient passes unchanged to both inputs.
void residual_add(Tensor& out, const Tensor& a, const Tensor& b);

namespace cuda {
void residual_add(Tensor& out, const Tensor& a, const Tensor& b, memory::StreamHandle stream);
}

}  // namespace oomlab::ops
