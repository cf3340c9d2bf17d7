// GELU, tanh approximation (GPT-2's): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// Element-wise over any shape; f32, bf16, f16; math in f32, one rounding on store.
#pragma once
#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// out = gelu(x); out has x's shape and dtype.
void gelu_forward(Tensor& out, const Tensor& x);
// dx = dout * gelu'(x) (overwrites dx); all three share shape and dtype.
void gelu_backward(Tensor& dx, const Tensor& dout, const Tensor& x);

namespace cuda {  // launchers behind the dispatch; arguments already checked
void gelu_forward(Tensor& out, const Tensor& x, memory::StreamHandle stream);
void gelu_backward(Tensor& dx, const Tensor& dout, const Tensor& x, memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
