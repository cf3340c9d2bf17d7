// Softmax cross-entropy: one block per row, two passes over the row with 16-byte accesses
// (8 bf16) when the vocabulary and pointers allow it, else one element per access. Pass 1: each
// thread keeps an online (max, sum of exp) over its vectors, rescaling its sum once per vector
// whose max is new, so it costs about one exp per element; the block merges the pairs. Pass 2
// reads the row again (from L1/L2: only a few rows per SM are in flight) and writes
// dlogits = (softmax - onehot(target)) * dloss. dlogits may alias logits: every element is read
// in pass 1 before the block barrier, and in pass 2 by the thread that then overwrites it.
// Padding columns (at or past `classes`) are skipped by the softmax and get gradient 0.
#include <cmath>

#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/core/op_checks.hpp"
#include "kernels/transformer/cross_entropy.hpp"
#include "kernels/transformer/row_kernels.cuh"

namespace oomlab::ops {

// CUDA kernels

// 1024 threads: a 50304-column bf16 row is 6288 vectors, about 6 per thread; two blocks per SM
// keep ~26 MB of rows in flight, so pass 2's re-read stays in cache.
constexpr unsigned kCrossEntropyBlock = 1024;

struct MaxSum {
  float max;
  float sum;  // sum of exp(x - max)
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  float m = fmaxf(a.max, b.max);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.sum * __expf(a.max - m) + b.sum * __expf(b.max - m)};
}

// Two 1024-thread blocks per SM where an SM holds 2048 threads (8.0, 9.0, 10.x); one where it
// holds 1024 (7.5) or 1536 (8.6, 8.9, 12.x), which ptxas would otherwise warn about and ignore.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800 || (__CUDA_ARCH__ > 800 && __CUDA_ARCH__ < 900) || \
                               __CUDA_ARCH__ >= 1100)
#define OOMLAB_CROSS_ENTROPY_BLOCKS_PER_SM 1
#else
#define OOMLAB_CROSS_ENTROPY_BLOCKS_PER_SM 2
#endif

template <class T, int V>
__global__ void __launch_bounds__(kCrossEntropyBlock, OOMLAB_CROSS_ENTROPY_BLOCKS_PER_SM)
cross_entropy_kernel(float* losses, T* dlogits, const T* logits, const std::int32_t* targets, int vocab,
                     int classes, float dloss) {
  __shared__ MaxSum partial[kCrossEntropyBlock / 32];
  const std::size_t row = blockIdx.x;
  const T* x = logits + row * vocab;
  const std::int32_t target = targets[row];
  const bool valid = target >= 0 && target < classes;
  // Read before the barrier below: in place, x[target] is overwritten in pass 2.
  const float target_logit = (threadIdx.x == 0 && valid) ? to_f32(x[target]) : 0.0f;

  MaxSum local{-INFINITY, 0.0f};
  for (int v = threadIdx.x * V; v < vocab; v += blockDim.x * V) {
    const RowVec<T, V> in = load_row_vec<T, V>(x + v);
    float vec_max = -INFINITY;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      if (v + k < classes) vec_max = fmaxf(vec_max, to_f32(in.v[k]));
    }
    if (vec_max == -INFINITY) continue;  // all padding (or all -inf): adds nothing
    if (vec_max > local.max) {
      local.sum *= __expf(local.max - vec_max);  // exp(-inf) = 0 for the first vector
      local.max = vec_max;
    }
#pragma unroll
    for (int k = 0; k < V; ++k) {
      if (v + k < classes) local.sum += __expf(to_f32(in.v[k]) - local.max);
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    MaxSum other{__shfl_xor_sync(0xFFFFFFFFu, local.max, offset),
                 __shfl_xor_sync(0xFFFFFFFFu, local.sum, offset)};
    local = merge(local, other);
  }
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = local;
  __syncthreads();
  MaxSum total = partial[0];
  for (unsigned w = 1; w < blockDim.x / 32; ++w) total = merge(total, partial[w]);
  const float log_sum = total.max + logf(total.sum);
  if (threadIdx.x == 0) losses[row] = valid ? log_sum - target_logit : NAN;
  if (!dlogits) return;

  T* dx = dlogits + row * vocab;
  for (int v = threadIdx.x * V; v < vocab; v += blockDim.x * V) {
    const RowVec<T, V> in = load_row_vec<T, V>(x + v);
    RowVec<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int column = v + k;
      const float p = column < classes ? __expf(to_f32(in.v[k]) - log_sum) : 0.0f;
      const float indicator = (valid && column == target) ? 1.0f : 0.0f;
      out.v[k] = from_f32<T>((p - indicator) * dloss);
    }
    store_row_vec<T, V>(dx + v, out);
  }
}

// kernel launchers

namespace cuda {

void softmax_cross_entropy(Tensor& losses, Tensor& dlogits, const Tensor& logits,
                           const Tensor& targets, float dloss, std::int64_t classes,
                           memory::StreamHandle stream) {
  const std::size_t rows = static_cast<std::size_t>(rows_of(logits));
  if (rows == 0) return;
  const int vocab = checked_int(logits.dim(-1), "softmax_cross_entropy vocabulary");
  dispatch_float(logits.dtype(), "softmax_cross_entropy", [&](auto zero) {
    using T = decltype(zero);
    auto launch = [&](auto width) {
      constexpr int V = decltype(width)::value;
      cross_entropy_kernel<T, V><<<ceil_div(rows, 1), kCrossEntropyBlock, 0, as_cuda_stream(stream)>>>(
          losses.data_as<float>(), dlogits.defined() ? dlogits.data_as<T>() : nullptr,
          logits.data_as<const T>(), targets.data_as<const std::int32_t>(), vocab,
          static_cast<int>(classes), dloss);
      OOMLAB_CUDA_CHECK_LAUNCH();
    };
    launch_with_row_width<T>(vocab, {logits.data(), dlogits.defined() ? dlogits.data() : logits.data()}, launch);
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
