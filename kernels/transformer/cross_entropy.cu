// Softmax cross-entropy: one block per row. Each thread keeps an online (max, sum of exp) over
// its strided elements; the block merges them; then each thread rewrites its own elements as
// gradients, so dlogits may alias logits (every element is read before it is overwritten, by
// the thread that overwrites it). Padding columns (at or past `classes`) are skipped by the
// softmax and get gradient 0.
#include <cmath>

#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/core/op_checks.hpp"
#include "kernels/transformer/cross_entropy.hpp"

namespace oomlab::ops {

// CUDA kernels

constexpr unsigned kCrossEntropyBlock = 512;

struct MaxSum {
  float max;
  float sum;  // sum of exp(x - max)
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  float m = fmaxf(a.max, b.max);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.sum * __expf(a.max - m) + b.sum * __expf(b.max - m)};
}

template <class T>
__global__ void cross_entropy_kernel(float* losses, T* dlogits, const T* logits,
                                     const std::int32_t* targets, std::size_t vocab, std::size_t classes,
                                     float dloss) {
  __shared__ MaxSum partial[kCrossEntropyBlock / 32];
  std::size_t row = blockIdx.x;
  const T* x = logits + row * vocab;
  MaxSum local{-INFINITY, 0.0f};
  for (std::size_t v = threadIdx.x; v < classes; v += blockDim.x) local = merge(local, {to_f32(x[v]), 1.0f});
  for (int offset = 16; offset > 0; offset >>= 1) {
    MaxSum other{__shfl_xor_sync(0xFFFFFFFFu, local.max, offset),
                 __shfl_xor_sync(0xFFFFFFFFu, local.sum, offset)};
    local = merge(local, other);
  }
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = local;
  __syncthreads();
  MaxSum total = partial[0];
  for (unsigned w = 1; w < blockDim.x / 32; ++w) total = merge(total, partial[w]);
  float log_sum = total.max + logf(total.sum);
  std::int32_t target = targets[row];
  bool valid = target >= 0 && static_cast<std::size_t>(target) < classes;
  if (threadIdx.x == 0) losses[row] = valid ? log_sum - to_f32(x[target]) : NAN;
  __syncthreads();  // x[target] is read before any thread overwrites it in place
  if (!dlogits) return;
  T* dx = dlogits + row * vocab;
  for (std::size_t v = threadIdx.x; v < vocab; v += blockDim.x) {
    float p = v < classes ? expf(to_f32(x[v]) - log_sum) : 0.0f;
    float indicator = (valid && v == static_cast<std::size_t>(target)) ? 1.0f : 0.0f;
    dx[v] = from_f32<T>((p - indicator) * dloss);
  }
}

// kernel launchers

namespace cuda {

void softmax_cross_entropy(Tensor& losses, Tensor& dlogits, const Tensor& logits,
                           const Tensor& targets, float dloss, std::int64_t classes,
                           memory::StreamHandle stream) {
  std::size_t rows = static_cast<std::size_t>(rows_of(logits));
  if (rows == 0) return;
  std::size_t vocab = static_cast<std::size_t>(logits.dim(-1));
  dispatch_float(logits.dtype(), "softmax_cross_entropy", [&](auto zero) {
    using T = decltype(zero);
    cross_entropy_kernel<T><<<ceil_div(rows, 1), kCrossEntropyBlock, 0, as_cuda_stream(stream)>>>(
        losses.data_as<float>(), dlogits.defined() ? dlogits.data_as<T>() : nullptr,
        logits.data_as<const T>(), targets.data_as<const std::int32_t>(), vocab,
        static_cast<std::size_t>(classes), dloss);
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
