// Token embedding plus optional learned positional embedding (GPT-2):
// out[b, t, :] = wte[tokens[b, t], :] + wpe[t, :].
#pragma once
#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// tokens: (B, T) i32; wte: (V, C) float dtype; wpe: (maxT >= T, C) same dtype, or an undefined
// Tensor for none (LLaMA); out: (B, T, C), wte's dtype. A token outside [0, V) throws on host;
// on cuda it cannot be reported from the kernel, so its row is written as zeros.
void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& wte, const Tensor& wpe);
// dwte (V, C) and dwpe (maxT, C), any float dtype, are ACCUMULATED (+=); dwpe may be undefined.
// Each token's (each position's) rows of dout are summed in f32 in row order and added once, so a
// bf16/f16 gradient is rounded once per call, and cuda equals host bit for bit (no atomics).
void embedding_backward(Tensor& dwte, Tensor& dwpe, const Tensor& dout, const Tensor& tokens);

namespace cuda {
void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& wte, const Tensor& wpe,
                       memory::StreamHandle stream);
void embedding_backward(Tensor& dwte, Tensor& dwpe, const Tensor& dout, const Tensor& tokens,
                        memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
