// CUDA launchers behind attention.hpp (defined in naive_attention.cu and fused_attention.cu).
// Declared without CUDA types so attention.cpp can call them behind OOMLAB_WITH_CUDA; pointers
// are device pointers to contiguous (heads, T, D) data (k, v, dk, dv: (heads / group, T, D)), `is_bf16` picks bf16 over
// f32, the stream comes last.
#pragma once
#include <cstdint>

#include "harness/memory/source.hpp"

namespace oomlab::ops::cuda {

struct AttentionShape {
  std::int64_t heads;     // B * H
  std::int64_t seq;       // T
  std::int64_t head_dim;  // D
  std::int64_t group = 1;  // H / Hkv: k, v, dk, dv hold heads / group heads; query head h reads h / group
};

// probs: (heads, T, T) of the same dtype; scores are written there and softmaxed in place.
void naive_attention_forward(AttentionShape shape, bool is_bf16, const void* q, const void* k,
                             const void* v, void* probs, void* out, memory::StreamHandle stream);
// workspace: (heads, T, T) of the same dtype, holds dP then dS.
void naive_attention_backward(AttentionShape shape, bool is_bf16, const void* q, const void* k,
                              const void* v, const void* probs, const void* d_out, void* workspace,
                              void* dq, void* dk, void* dv, memory::StreamHandle stream);

// The fused backward for head dim 64 runs on Hopper's wgmma (flash_backward_sm90.cu) where
// detail::device_runs_wgmma() (kernels/core/wgmma_device.hpp) holds, else on mma.sync.

// bf16 only; head_dim 64 or 128; lse (heads, T) f32.
void fused_attention_forward(AttentionShape shape, const void* q, const void* k, const void* v,
                             void* out, float* lse, memory::StreamHandle stream);
// delta (heads, T) f32 and dq_accum (heads, T, D) f32 are scratch (overwritten).
void fused_attention_backward(AttentionShape shape, const void* q, const void* k, const void* v,
                              const void* out, const float* lse, const void* d_out, float* delta,
                              float* dq_accum, void* dq, void* dk, void* dv,
                              memory::StreamHandle stream);

}  // namespace oomlab::ops::cuda
