// Global grad norm: a partial sum per chunk of every gradient (many tensors a launch:
// kernels/core/multi_tensor.cuh), then a fixed-order final sum, so the result is bit-identical
// from run to run. Clipping reads the norm on the device. Both are memory-bound passes over every
// gradient (13.5 GB at 7B in bf16; ~150 tensors on GPT-2): 128-bit loads and grids that fill every
// SM, or they cost more than the AdamW step itself.
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/elementwise.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/core/multi_tensor.cuh"
#include "kernels/transformer/grad_norm.hpp"

namespace oomlab::ops {

// CUDA kernels

constexpr unsigned kNormBlock = 1024;  // the final sum
constexpr unsigned kChunkBlock = 256;  // a chunk's block

// Sums v over the block in a fixed order; the result is valid in thread 0.
__device__ float block_sum(float v) {
  __shared__ float warp_sums[kNormBlock / 32];
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
  if (threadIdx.x == 0) {
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += warp_sums[w];
  }
  __syncthreads();
  return total;
}

// One chunk's sum of squares into its partial (kernels/core/multi_tensor.cuh: a block per chunk).
template <class T>
__global__ void sum_squares_kernel(const __grid_constant__ ChunkBatch<1> batch, float* partials) {
  const TensorChunk& chunk = batch.chunks[blockIdx.x];
  const T* grad = chunk_data<const T>(batch, 0, chunk);
  const bool vectorized = (batch.vectorized >> chunk.tensor) & 1;
  const std::int64_t whole = vectorized ? chunk.length / kMapWidth * kMapWidth : 0;
  float sum = 0.0f;
  for (std::int64_t base = std::int64_t{threadIdx.x} * kMapWidth; base < whole; base += blockDim.x * kMapWidth) {
    const MapVec<T> a = *reinterpret_cast<const MapVec<T>*>(grad + base);
#pragma unroll
    for (int k = 0; k < kMapWidth; ++k) {
      const float g = to_f32(a.v[k]);
      sum += g * g;
    }
  }
  for (std::int64_t i = whole + threadIdx.x; i < chunk.length; i += blockDim.x) {
    const float g = to_f32(grad[i]);
    sum += g * g;
  }
  const float total = block_sum(sum);
  if (threadIdx.x == 0) partials[batch.first_chunk + blockIdx.x] = total;
}

__global__ void finish_norm_kernel(float* norm, const float* partials, std::size_t count) {
  float sum = 0.0f;
  for (std::size_t i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
  float total = block_sum(sum);
  if (threadIdx.x == 0) *norm = sqrtf(total);
}

template <class T>
__global__ void clip_kernel(const __grid_constant__ ChunkBatch<1> batch, const float* norm, float max_norm) {
  const TensorChunk& chunk = batch.chunks[blockIdx.x];
  T* grad = chunk_data<T>(batch, 0, chunk);
  const float factor = fminf(1.0f, max_norm / (*norm + 1e-6f));
  const bool vectorized = (batch.vectorized >> chunk.tensor) & 1;
  const std::int64_t whole = vectorized ? chunk.length / kMapWidth * kMapWidth : 0;
  for (std::int64_t base = std::int64_t{threadIdx.x} * kMapWidth; base < whole; base += blockDim.x * kMapWidth) {
    MapVec<T> a = *reinterpret_cast<const MapVec<T>*>(grad + base);
#pragma unroll
    for (int k = 0; k < kMapWidth; ++k) a.v[k] = from_f32<T>(to_f32(a.v[k]) * factor);
    *reinterpret_cast<MapVec<T>*>(grad + base) = a;
  }
  for (std::int64_t i = whole + threadIdx.x; i < chunk.length; i += blockDim.x) {
    grad[i] = from_f32<T>(to_f32(grad[i]) * factor);
  }
}

// The gradients of one dtype as chunks: at least kNormChunk elements each, and at most
// kGradNormBlocks chunks a tensor, so the partials fit the scratch of kGradNormBlocks per tensor.
template <class T>
std::vector<ChunkedTensor<1>> chunks_of_dtype(const std::vector<Tensor>& grads, DType dtype) {
  constexpr std::int64_t kNormChunk = 32768;
  std::vector<ChunkedTensor<1>> chunked;
  for (const Tensor& grad : grads) {
    if (grad.dtype() != dtype || grad.numel() == 0) continue;
    const std::int64_t n = grad.numel();
    const std::int64_t spread = (ceil_div(n, std::int64_t{kGradNormBlocks}) + kMapWidth - 1) / kMapWidth * kMapWidth;
    chunked.push_back({{grad.data()}, n, std::max(kNormChunk, spread), map_aligned(grad.data(), sizeof(T))});
  }
  return chunked;
}


// kernel launchers

namespace cuda {

void global_grad_norm(Tensor& norm, const std::vector<Tensor>& grads, Tensor& partials,
                      memory::StreamHandle stream) {
  cudaStream_t cuda_stream = as_cuda_stream(stream);
  std::int64_t used = 0;  // the partials written, in a fixed order: dtype, tensor, chunk
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    dispatch_float(dtype, "global_grad_norm", [&](auto zero) {
      using T = decltype(zero);
      float* into = partials.data_as<float>() + used;
      used += launch_chunked(chunks_of_dtype<T>(grads, dtype), [&](const ChunkBatch<1>& batch) {
        sum_squares_kernel<T><<<batch.chunk_count, kChunkBlock, 0, cuda_stream>>>(batch, into);
        OOMLAB_CUDA_CHECK_LAUNCH();
      });
    });
  }
  finish_norm_kernel<<<1, kNormBlock, 0, cuda_stream>>>(norm.data_as<float>(), partials.data_as<const float>(),
                                                       static_cast<std::size_t>(used));
  OOMLAB_CUDA_CHECK_LAUNCH();
}

void clip_grads(const std::vector<Tensor>& grads, const Tensor& norm, float max_norm, memory::StreamHandle stream) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    dispatch_float(dtype, "clip_grads_by_norm", [&](auto zero) {
      using T = decltype(zero);
      launch_chunked(chunks_of_dtype<T>(grads, dtype), [&](const ChunkBatch<1>& batch) {
        clip_kernel<T><<<batch.chunk_count, kChunkBlock, 0, as_cuda_stream(stream)>>>(
            batch, norm.data_as<const float>(), max_norm);
        OOMLAB_CUDA_CHECK_LAUNCH();
      });
    });
  }
}

}  // namespace cuda
}  // namespace oomlab::ops
