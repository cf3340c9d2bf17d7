// Causal multi-head attention, two ways, on q of shape (B, H, T, D) and k, v of shape
// (B, Hkv, T, D) (contiguous), scale 1/sqrt(D). Hkv must divide H: grouped-query attention, query
// head h reading K/V head h / (H / Hkv) as Hugging Face's repeat_kv does, without materialising
// the repeated K/V; Hkv = H is plain multi-head attention. dk and dv have k's shape, each K/V
// head's gradient summed over the H / Hkv query heads of its group. Both dispatch on the
// tensors' device: cuda runs the kernels, host the CPU references (attention_reference.hpp), dry
// checks shapes (the one invariant, docs/architecture.md).
//
// naive — what a textbook implementation does, and why long contexts run out of memory:
//   forward  S = scale Q K^T (written into `probs`), P = causal softmax(S) in place, O = P V.
//   backward dP = dO V^T, dS = P * (dP - rowsum(dP * P)), dQ = scale dS K, dK = scale dS^T Q,
//            dV = P^T dO.
//   The caller allocates `probs` (B, H, T, T) of q's dtype and must keep q, k, v, probs and out
//   alive from forward to backward. The backward allocates one (B, H, T, T) workspace of q's
//   dtype for dP/dS (Tag::workspace) and frees it before returning. Memory: 2 B H T^2 elements.
//   dtypes: f32 and bf16. On cuda the six GEMMs are cuBLAS strided-batched calls, one batch
//   entry per K/V head with its group's query rows stacked (one handle per GPU, no workspace, so
//   cuBLAS allocates nothing behind the allocator's back).
//
// fused — flash-attention-2: online softmax over K/V tiles held in shared memory, never a T x T
//   buffer. The forward keeps only `out` and `lse` (B, H, T) f32, the per-row logsumexp of the
//   scaled scores. The backward recomputes P from q, k and lse, and allocates (Tag::workspace,
//   freed before returning) a (B, H, T) f32 `delta` = rowsum(dO * O) and a (B, H, T, D) f32 dQ
//   accumulator: scratch linear in T. The caller keeps q, k, v, out and lse for backward.
//   With Hkv < H a backward block sums its K/V head's dK, dV over the group in registers; the
//   scratch is per query head, the same bytes as for Hkv = H.
//   dtypes: bf16 on cuda (f32 accumulation, tensor cores), f32 and bf16 on host; D = 64 or 128.
//   On Hopper the D = 64 backward runs on wgmma (flash_backward_sm90.cu), elsewhere on mma.sync;
//   both use the same scratch.
//
// Outputs are written in place and must be allocated by the caller with the shapes above and q's
// dtype. Bad shapes, dtypes, devices or head dims throw std::invalid_argument.
#pragma once
#include <cstddef>

#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// (B, H, T, T): the shape of the naive forward's `probs`, for callers that allocate it.
Shape attention_probs_shape(const Tensor& q);
// (B, H, T): the shape of the fused forward's `lse` (f32).
Shape attention_lse_shape(const Tensor& q);

void attention_naive_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& probs,
                             Tensor& out);
void attention_naive_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& probs, const Tensor& d_out, Tensor& dq, Tensor& dk,
                              Tensor& dv);

void attention_fused_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out,
                             Tensor& lse);
void attention_fused_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                              const Tensor& lse, const Tensor& d_out, Tensor& dq, Tensor& dk,
                              Tensor& dv);

// Bytes each backward allocates for its scratch (before the allocator's rounding).
// They depend on q alone: the scratch is per query head, whatever Hkv is.
std::size_t attention_naive_backward_workspace_bytes(const Tensor& q);
std::size_t attention_fused_backward_workspace_bytes(const Tensor& q);

}  // namespace oomlab::ops
