// How the deterministic reductions partition their input (host-only, shape-only, so dry and the
// host backend allocate the same workspace as cuda), and the CUDA launchers (reduce.cu).
#pragma once
#include <cstdint>

#include "harness/memory/source.hpp"
#include "kernels/core/dtype.hpp"

namespace oomlab::ops::detail {

// A whole-tensor sum: `count` blocks of `per_block` consecutive elements, one f32 partial each.
struct SumPlan {
  std::int64_t count = 1;
  std::int64_t per_block = 0;
};
SumPlan plan_sum(std::int64_t numel);

// A per-channel sum over `rows` rows of `channels`: `count` chunks of `rows_per_chunk` rows, one
// f32 partial per (chunk, channel).
struct ChannelSumPlan {
  std::int64_t count = 1;
  std::int64_t rows_per_chunk = 0;
};
ChannelSumPlan plan_channel_sum(std::int64_t rows);

#if OOMLAB_WITH_CUDA
// out[0] = scale * sum(x); partials holds plan_sum(numel).count floats.
void sum_cuda(DType dtype, const void* x, std::int64_t numel, float scale, float* partials,
              float* out, memory::StreamHandle stream);
// out[c] = scale * sum_r x[r, c], stored as out_dtype; partials holds
// plan_channel_sum(rows).count * channels floats.
void channel_sum_cuda(DType dtype, const void* x, std::int64_t rows, std::int64_t channels,
                      float scale, float* partials, DType out_dtype, void* out,
                      memory::StreamHandle stream);
#endif

}  // namespace oomlab::ops::detail
