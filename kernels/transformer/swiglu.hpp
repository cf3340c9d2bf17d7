// SiLU-gated MLP activation (LLaMA's SwiGLU): out = silu(gate) * up, silu(g) = g * sigmoid(g).
#pragma once
#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// out, gate, up share shape and dtype (f32, bf16, f16).
void swiglu_forward(Tensor& out, const Tensor& gate, const Tensor& up);
// dgate = dout * up * silu'(gate), dup = dout * silu(gate); both overwritten.
void swiglu_backward(Tensor& dgate, Tensor& dup, const Tensor& dout, const Tensor& gate,
                     const Tensor& up);

namespace cuda {
void swiglu_forward(Tensor& out, const Tensor& gate, const Tensor& up, memory::StreamHandle stream);
void swiglu_backward(Tensor& dgate, Tensor& dup, const Tensor& dout, const Tensor& gate,
                     const Tensor& up, memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
