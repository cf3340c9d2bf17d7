// Rotary position embeddings (RoPE), as LLaMA applies them to queries and keys: each head's
// vector at position t is rotated pairwise, pair i = (x[i], x[i + D/2]) (Hugging Face's
// "rotate_half" layout) by the angle t * base^(-2i/D). In place on head-major (B, H, T, D)
// tensors, so it costs no memory. The backward is the inverse rotation applied to the gradient
// (the map is orthogonal: its Jacobian's transpose is its inverse).
#pragma once
#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"
#include "kernels/transformer/rope_math.hpp"

namespace oomlab::ops {

// x (B, H, T, D), D even, f32/bf16/f16; positions 0..T-1.
void rope_forward(Tensor& x, float base = kRopeBase);
// dx: the gradient w.r.t. the rotated tensor in, w.r.t. the unrotated one out.
void rope_backward(Tensor& dx, float base = kRopeBase);

namespace cuda {
void rope_rotate(Tensor& x, float base, bool inverse, memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
