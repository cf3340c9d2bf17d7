// Global grad norm: per-tensor partial sums with a fixed grid, then a fixed-order final sum,
// so the result is bit-identical from run to run. Clipping reads the norm on the device.
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/transformer/grad_norm.hpp"

namespace oomlab::ops {

// CUDA kernels

constexpr unsigned kNormBlock = 256;

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
__global__ void sum_squares_kernel(float* partials, const T* grad, std::size_t n) {
  float sum = 0.0f;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float g = to_f32(grad[i]);
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

template <class T>
__global__ void clip_kernel(T* grad, std::size_t n, const float* norm, float max_norm) {
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float factor = fminf(1.0f, max_norm / (*norm + 1e-6f));
  grad[i] = from_f32<T>(to_f32(grad[i]) * factor);
}

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
          partials.data_as<float>() + t * kGradNormBlocks, grad.data_as<const T>(), n);
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
    clip_kernel<T><<<ceil_div(n, kNormBlock), kNormBlock, 0, as_cuda_stream(stream)>>>(
        grad.data_as<T>(), n, norm.data_as<const float>(), max_norm);
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
