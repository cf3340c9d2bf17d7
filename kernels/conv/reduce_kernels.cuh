// Deterministic reduction kernels shared by reduce.cu, l1_loss.cu and conv2d.cu (bias gradient):
// each block sums a fixed range in a fixed order into one partial, then one block sums the
// partials in order. No atomics, so results are bit-reproducible.
#pragma once
#include <cstdint>

#include "kernels/conv/reduce_launch.hpp"
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"

namespace oomlab::ops::detail {

constexpr int kReduceThreads = 256;

// Sum over the block; the result is valid in thread 0 only. Call at most once per kernel (the
// shared scratch is not re-synchronised for a second use).
__device__ __forceinline__ float block_sum_to_thread0(float value) {
  __shared__ float warp_sums[kReduceThreads / 32];
  value = warp_sum(value);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = value;
  __syncthreads();
  float total = 0.0f;
  if (threadIdx.x == 0) {
    for (int w = 0; w < kReduceThreads / 32; ++w) total += warp_sums[w];
  }
  return total;
}

// partials[b] = sum of load(i) for i in block b's range. `load` maps an index to an f32 value.
template <class Load>
__global__ void __launch_bounds__(kReduceThreads)
    partial_sum_kernel(Load load, std::int64_t numel, std::int64_t per_block, float* partials) {
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.x) * per_block;
  const std::int64_t end = begin + per_block < numel ? begin + per_block : numel;
  float acc = 0.0f;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += kReduceThreads) acc += load(i);
  const float total = block_sum_to_thread0(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// out[0] = scale * sum(partials[0..count)); one block. (A template only so that this header can
// define it in every .cu that includes it.)
template <int Threads = kReduceThreads>
__global__ void __launch_bounds__(Threads)
    final_sum_kernel(const float* partials, std::int64_t count, float scale, float* out) {
  float acc = 0.0f;
  static_assert(Threads == kReduceThreads, "block_sum_to_thread0 assumes kReduceThreads");
  for (std::int64_t i = threadIdx.x; i < count; i += Threads) acc += partials[i];
  const float total = block_sum_to_thread0(acc);
  if (threadIdx.x == 0) out[0] = scale * total;
}

// Launches both passes: out[0] = scale * sum_i load(i).
template <class Load>
void launch_sum(Load load, std::int64_t numel, float scale, float* partials, float* out,
                cudaStream_t stream) {
  const SumPlan plan = plan_sum(numel);
  if (numel > 0) {
    partial_sum_kernel<<<static_cast<unsigned>(plan.count), kReduceThreads, 0, stream>>>(
        load, numel, plan.per_block, partials);
    OOMLAB_CUDA_CHECK_LAUNCH();
  }
  final_sum_kernel<><<<1, kReduceThreads, 0, stream>>>(partials, numel > 0 ? plan.count : 0, scale,
                                                      out);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

// partials[chunk, c] = sum over the chunk's rows of x[r, c]. Grid: (chunks, ceil(C / 256)).
// Threads cover up to 256 channels; when there are fewer, several row groups share the block and
// are combined in shared memory in a fixed order.
template <class T>
__global__ void __launch_bounds__(kReduceThreads)
    channel_partial_sum_kernel(const T* x, std::int64_t rows, std::int64_t channels,
                               std::int64_t rows_per_chunk, float* partials) {
  __shared__ float group_sums[kReduceThreads];
  const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.y) * kReduceThreads;
  const int width = static_cast<int>(channels - c0 < kReduceThreads ? channels - c0 : kReduceThreads);
  const int groups = kReduceThreads / width;
  const int group = threadIdx.x / width;
  const std::int64_t c = c0 + threadIdx.x % width;
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.x) * rows_per_chunk;
  const std::int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  float acc = 0.0f;
  if (group < groups) {
    for (std::int64_t r = begin + group; r < end; r += groups) acc += to_f32(x[r * channels + c]);
  }
  group_sums[threadIdx.x] = acc;
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < width) {
    float total = 0.0f;
    for (int g = 0; g < groups; ++g) total += group_sums[g * width + threadIdx.x];
    partials[static_cast<std::int64_t>(blockIdx.x) * channels + c] = total;
  }
}

// out[c] = scale * sum over chunks of partials[chunk, c], in chunk order.
template <class TOut>
__global__ void __launch_bounds__(kReduceThreads)
    channel_final_kernel(const float* partials, std::int64_t chunks, std::int64_t channels,
                         float scale, TOut* out) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kReduceThreads + threadIdx.x;
  if (c >= channels) return;
  float total = 0.0f;
  for (std::int64_t k = 0; k < chunks; ++k) total += partials[k * channels + c];
  out[c] = from_f32<TOut>(scale * total);
}

template <class T, class TOut>
void launch_channel_sum(const T* x, std::int64_t rows, std::int64_t channels, float scale,
                        float* partials, TOut* out, cudaStream_t stream) {
  if (channels == 0) return;
  const ChannelSumPlan plan = plan_channel_sum(rows);
  const std::int64_t chunks = rows > 0 ? plan.count : 0;
  if (chunks > 0) {
    dim3 grid(static_cast<unsigned>(chunks), ceil_div(static_cast<std::size_t>(channels), kReduceThreads));
    channel_partial_sum_kernel<T><<<grid, kReduceThreads, 0, stream>>>(x, rows, channels,
                                                                        plan.rows_per_chunk, partials);
    OOMLAB_CUDA_CHECK_LAUNCH();
  }
  channel_final_kernel<TOut><<<ceil_div(static_cast<std::size_t>(channels), kReduceThreads),
                               kReduceThreads, 0, stream>>>(partials, chunks, channels, scale, out);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace oomlab::ops::detail
