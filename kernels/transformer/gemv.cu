// The few-rows Linear (gemv.cuh): memory-bound, so everything serves the stream of W. A warp owns
// two rows of W and reads them as 16-byte vectors, kGemvUnroll of each in flight before it uses
// any (one row's loads alone leave the memory system idle between round trips); W is loaded
// streaming (read once: it should not evict x from L1); the few rows of x come through L1. f32
// accumulation, each warp's sums reduced by shuffles, the epilogue (bias, residual) added in f32
// and rounded once, as cuBLASLt's epilogue does.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/transformer/gemv.cuh"

namespace oomlab::ops::cuda {
namespace {

constexpr int kGemvWarps = 4;        // a block: 4 warps
constexpr int kGemvRowsPerWarp = 2;  // W rows a warp streams side by side
constexpr int kGemvUnroll = 4;       // 16-byte vectors of each row in flight per lane
constexpr int kVectorElements = 8;   // bf16/f16 elements in 16 bytes

__device__ __forceinline__ float2 pair_to_f32(__nv_bfloat162 v) { return __bfloat1622float2(v); }
__device__ __forceinline__ float2 pair_to_f32(__half2 v) { return __half22float2(v); }

// sum += w · x over one 16-byte vector of each (8 elements).
template <class T>
__device__ __forceinline__ float dot_vector(const int4& w, const int4& x, float sum) {
  using Pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
  const Pair* wp = reinterpret_cast<const Pair*>(&w);
  const Pair* xp = reinterpret_cast<const Pair*>(&x);
#pragma unroll
  for (int i = 0; i < kVectorElements / 2; ++i) {
    const float2 a = pair_to_f32(wp[i]), b = pair_to_f32(xp[i]);
    sum = fmaf(a.x, b.x, sum);
    sum = fmaf(a.y, b.y, sum);
  }
  return sum;
}

template <class T, int M>
__global__ void __launch_bounds__(kGemvWarps * 32)
gemv_kernel(T* y, const T* x, const T* w, const T* bias, const T* residual, int n, int vectors) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first_row = (blockIdx.x * kGemvWarps + warp) * kGemvRowsPerWarp;
  if (first_row >= n) return;
  const int rows = min(kGemvRowsPerWarp, n - first_row);
  const int4* w_vectors = reinterpret_cast<const int4*>(w) + static_cast<std::size_t>(first_row) * vectors;
  const int4* x_vectors = reinterpret_cast<const int4*>(x);
  float acc[kGemvRowsPerWarp][M] = {};
  for (int base = lane; base < vectors; base += 32 * kGemvUnroll) {
    int4 wv[kGemvRowsPerWarp][kGemvUnroll];
#pragma unroll
    for (int r = 0; r < kGemvRowsPerWarp; ++r) {
#pragma unroll
      for (int u = 0; u < kGemvUnroll; ++u) {
        const int v = base + u * 32;
        wv[r][u] = r < rows && v < vectors ? __ldcs(w_vectors + static_cast<std::size_t>(r) * vectors + v)
                                           : make_int4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < kGemvUnroll; ++u) {
      const int v = base + u * 32;
      if (v >= vectors) break;
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const int4 xv = __ldg(x_vectors + static_cast<std::size_t>(m) * vectors + v);
#pragma unroll
        for (int r = 0; r < kGemvRowsPerWarp; ++r) acc[r][m] = dot_vector<T>(wv[r][u], xv, acc[r][m]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kGemvRowsPerWarp; ++r) {
#pragma unroll
    for (int m = 0; m < M; ++m) acc[r][m] = warp_sum(acc[r][m]);
  }
  if (lane != 0) return;
  for (int r = 0; r < rows; ++r) {
    const int row = first_row + r;
    for (int m = 0; m < M; ++m) {
      float value = acc[r][m];
      if (bias != nullptr) value += to_f32(bias[row]);
      const std::size_t at = static_cast<std::size_t>(m) * n + row;
      if (residual != nullptr) value += to_f32(residual[at]);
      y[at] = from_f32<T>(value);
    }
  }
}

template <class T, int M>
void launch(Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual, std::int64_t n,
            std::int64_t k, memory::StreamHandle stream) {
  const int rows_per_block = kGemvWarps * kGemvRowsPerWarp;
  const auto blocks = static_cast<unsigned>((n + rows_per_block - 1) / rows_per_block);
  gemv_kernel<T, M><<<blocks, kGemvWarps * 32, 0, as_cuda_stream(stream)>>>(
      y.data_as<T>(), x.data_as<const T>(), w.data_as<const T>(), bias.defined() ? bias.data_as<const T>() : nullptr,
      residual.defined() ? residual.data_as<const T>() : nullptr, static_cast<int>(n),
      static_cast<int>(k / kVectorElements));
  OOMLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool try_gemv(Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual,
              std::int64_t m, std::int64_t n, std::int64_t k, memory::StreamHandle stream) {
  static_assert(kGemvMaxRows == 1, "one row: launch<T, 1>");
  const DType dtype = x.dtype();
  if ((dtype != DType::bf16 && dtype != DType::f16) || m < 1 || m > kGemvMaxRows || k % kVectorElements != 0 ||
      n > (std::int64_t{1} << 30) || k > (std::int64_t{1} << 30)) {
    return false;
  }
  if (!aligned16({y.data(), x.data(), w.data()})) return false;
  if (dtype == DType::bf16) launch<__nv_bfloat16, 1>(y, x, w, bias, residual, n, k, stream);
  else launch<__half, 1>(y, x, w, bias, residual, n, k, stream);
  return true;
}

}  // namespace oomlab::ops::cuda
