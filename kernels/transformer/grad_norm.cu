// Global grad norm: per-tensor partial sums with a fixed grid, then a fixed-order final sum,
// so the result is bit-identical from run to run. Clipping reads the norm on the device. Both
// are memory-bound passes over every gradient (13.5 GB at 7B in bf16): 128-bit loads and a grid
// that fills every SM, or they cost more than the AdamW step itself.
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/elementwise.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/transformer/grad_norm.hpp"

namespace oomlab::ops {

// CUDA kernels

constexpr unsigned kNormBlock = 1024;  // x kGradNormBlocks: every SM full on an H200

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

template <class T>
__global__ void sum_squares_kernel(float* partials, const T* grad, std::size_t n, bool vectorized) {
  float sum = 0.0f;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t scalar_from = 0;
  if (vectorized) {  // kMapWidth elements per 128-bit (bf16) or 2 x 128-bit (f32) load
    const std::size_t vectors = n / kMapWidth;
    const auto* packed = reinterpret_cast<const MapVec<T>*>(grad);
    for (std::size_t i = first; i < vectors; i += stride) {
      const MapVec<T> a = packed[i];
#pragma unroll
      for (int k = 0; k < kMapWidth; ++k) {
        const float g = to_f32(a.v[k]);
        sum += g * g;
      }
    }
    scalar_from = vectors * kMapWidth;
  }
  for (std::size_t i = scalar_from + first; i < n; i += stride) {
    const float g = to_f32(grad[i]);
    sum += g * g;
  }
  float total = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void finish_norm_kernel(float* norm, const float* partials, std::size_t count) {
  float sum = 0.0f;
  for (std::size_t i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
  float total = block_sum(sum);
  if (threadIdx.x == 0) *norm = sqrtf(total);
}

// g * min(1, max_norm / (norm + 1e-6)), the norm read on the device.
struct ClipByNorm {
  const float* norm;
  float max_norm;
  __device__ float operator()(float g) const { return g * fminf(1.0f, max_norm / (*norm + 1e-6f)); }
};

// kernel launchers

namespace cuda {

void global_grad_norm(Tensor& norm, const std::vector<Tensor>& grads, Tensor& partials,
                      memory::StreamHandle stream) {
  cudaStream_t cuda_stream = as_cuda_stream(stream);
  partials.zero();  // empty tensors leave their slice at zero
  for (std::size_t t = 0; t < grads.size(); ++t) {
    const Tensor& grad = grads[t];
    std::size_t n = static_cast<std::size_t>(grad.numel());
    if (n == 0) continue;
    dispatch_float(grad.dtype(), "global_grad_norm", [&](auto zero) {
      using T = decltype(zero);
      sum_squares_kernel<T><<<kGradNormBlocks, kNormBlock, 0, cuda_stream>>>(
          partials.data_as<float>() + t * kGradNormBlocks, grad.data_as<const T>(), n,
          map_aligned(grad.data(), sizeof(T)));
      OOMLAB_CUDA_CHECK_LAUNCH();
    });
  }
  finish_norm_kernel<<<1, kNormBlock, 0, cuda_stream>>>(
      norm.data_as<float>(), partials.data_as<const float>(), static_cast<std::size_t>(partials.numel()));
  OOMLAB_CUDA_CHECK_LAUNCH();
}

void clip_grad(Tensor& grad, const Tensor& norm, float max_norm, memory::StreamHandle stream) {
  std::size_t n = static_cast<std::size_t>(grad.numel());
  if (n == 0) return;
  dispatch_float(grad.dtype(), "clip_grads_by_norm", [&](auto zero) {
    using T = decltype(zero);
    launch_map1(grad.data_as<T>(), grad.data_as<const T>(), n, ClipByNorm{norm.data_as<const float>(), max_norm},
                as_cuda_stream(stream));
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
