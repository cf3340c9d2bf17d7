// CPU references for causal attention on plain arrays, (B*H, T, D) contiguous, scale 1/sqrt(D).
// Grouped-query attention: k, v, dk and dv hold (B*H / group, T, D); flat query head h reads
// K/V head h / group (b*H + h over group is b*Hkv + h / group, Hugging Face's repeat_kv), and a
// K/V head's gradients sum over the `group` query heads that read it. group = 1 is plain MHA.
// Accumulation is in double whatever Real is; Real = double serves finite differences, Real =
// float serves the host backend. Two algorithms that must agree:
//  - naive: materialises P = softmax(mask(scale * Q K^T)) as (T, T) per head;
//  - fused: the flash-attention-2 recurrence (key tiles, online softmax), keeping only the output
//    and the per-row logsumexp L; its backward recomputes P from Q, K and L.
#pragma once
#include <cstdint>

namespace oomlab::ops::reference {

struct AttentionDims {
  std::int64_t heads;     // B * H: independent (T, D) problems
  std::int64_t seq;       // T
  std::int64_t head_dim;  // D
  std::int64_t group = 1;  // H / Hkv: query heads per K/V head (divides heads)
};

// probs (heads, T, T): P with zeros above the diagonal; out (heads, T, D).
template <class Real>
void naive_attention_forward(AttentionDims dims, const Real* q, const Real* k, const Real* v,
                             Real* probs, Real* out);

// Gradients from the saved probs: dP = dO V^T, dS = P * (dP - rowsum(dP * P)),
// dQ = scale dS K, dK = scale dS^T Q, dV = P^T dO.
template <class Real>
void naive_attention_backward(AttentionDims dims, const Real* q, const Real* k, const Real* v,
                              const Real* probs, const Real* d_out, Real* dq, Real* dk, Real* dv);

// out (heads, T, D); lse (heads, T) = log(sum_j exp(scale * q_i . k_j)) over j <= i.
// key_tile: keys per online-softmax step (any value >= 1 gives the same result).
template <class Real>
void fused_attention_forward(AttentionDims dims, const Real* q, const Real* k, const Real* v,
                             Real* out, float* lse, std::int64_t key_tile = 16);

// Recomputes P = exp(scale * q_i . k_j - L_i); Delta_i = rowsum(dO * O) replaces rowsum(dP * P).
template <class Real>
void fused_attention_backward(AttentionDims dims, const Real* q, const Real* k, const Real* v,
                              const Real* out, const float* lse, const Real* d_out, Real* dq,
                              Real* dk, Real* dv);

}  // namespace oomlab::ops::reference
