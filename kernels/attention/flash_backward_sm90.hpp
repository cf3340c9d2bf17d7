// The fused-attention backward's main pass on Hopper's wgmma, head dim 64 (see
// flash_backward_sm90.cu). fused_attention.cu calls it between its delta pass and its dQ
// rounding pass where detail::device_runs_wgmma() holds.
#pragma once
#include <cuda_runtime_api.h>

namespace oomlab::ops::cuda::flash {

// Adds the unscaled dQ into dq_accum (zeroed by the caller) and writes dK (scaled by `scale`)
// and dV; all tensors (heads, seq, 64) contiguous, lse and delta (heads, seq) f32, except k, v,
// dk, dv: (heads / group, seq, 64), each K/V head's gradients summed over its group.
void launch_backward_sm90_d64(int heads, int group, int seq, const void* q, const void* k, const void* v,
                              const void* d_out, const float* lse, const float* delta,
                              float* dq_accum, void* dk, void* dv, float scale, cudaStream_t stream);

}  // namespace oomlab::ops::cuda::flash
