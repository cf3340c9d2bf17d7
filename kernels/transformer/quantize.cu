// int8 row-wise quantisation: CUDA kernels (one warp per row) and launchers.
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/core/op_checks.hpp"
#include "kernels/transformer/quantize.hpp"
#include "kernels/transformer/quantize_math.hpp"

namespace oomlab::ops {

// CUDA kernels

constexpr unsigned kWarpsPerBlock = 8;

template <class T>
__global__ void quantize_rows_kernel(std::int8_t* q, float* scales, const T* x, std::size_t rows,
                                     std::size_t cols) {
  std::size_t row = static_cast<std::size_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  unsigned lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* x_row = x + row * cols;
  float absmax = 0.0f;
  for (std::size_t c = lane; c < cols; c += 32) absmax = fmaxf(absmax, fabsf(to_f32(x_row[c])));
  absmax = warp_max(absmax);
  if (lane == 0) scales[row] = int8_scale_from_absmax(absmax);
  float inverse = int8_inverse_scale(absmax);
  for (std::size_t c = lane; c < cols; c += 32) q[row * cols + c] = quantize_int8(to_f32(x_row[c]), inverse);
}

template <class T>
__global__ void dequantize_kernel(T* out, const std::int8_t* q, const float* scales, std::size_t n,
                                  std::size_t cols) {
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = from_f32<T>(static_cast<float>(q[i]) * scales[i / cols]);
}

// kernel launchers

namespace cuda {

void quantize_int8_rowwise(Tensor& q, Tensor& scales, const Tensor& x, memory::StreamHandle stream) {
  std::size_t rows = static_cast<std::size_t>(rows_of(x));
  if (rows == 0) return;
  std::size_t cols = static_cast<std::size_t>(x.numel()) / rows;
  dispatch_float(x.dtype(), "quantize_int8_rowwise", [&](auto zero) {
    using T = decltype(zero);
    quantize_rows_kernel<T><<<ceil_div(rows, kWarpsPerBlock), kWarpsPerBlock * 32, 0,
                              as_cuda_stream(stream)>>>(q.data_as<std::int8_t>(),
                                                        scales.data_as<float>(),
                                                        x.data_as<const T>(), rows, cols);
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

void dequantize_int8_rowwise(Tensor& out, const Tensor& q, const Tensor& scales,
                             memory::StreamHandle stream) {
  std::size_t n = static_cast<std::size_t>(q.numel());
  if (n == 0) return;
  std::size_t cols = static_cast<std::size_t>(q.dim(-1));
  dispatch_float(out.dtype(), "dequantize_int8_rowwise", [&](auto zero) {
    using T = decltype(zero);
    constexpr unsigned kBlock = 256;
    dequantize_kernel<T><<<ceil_div(n, kBlock), kBlock, 0, as_cuda_stream(stream)>>>(
        out.data_as<T>(), q.data_as<const std::int8_t>(), scales.data_as<const float>(), n, cols);
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
