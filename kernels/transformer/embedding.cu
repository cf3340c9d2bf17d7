// Embedding: CUDA kernels and launchers.
#include <algorithm>

#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/transformer/embedding.hpp"

namespace oomlab::ops {

constexpr unsigned kEmbeddingBlock = 256;      // threads of the dwte kernel (a multiple of 32)
constexpr std::size_t kEmbeddingChannels = 4096;  // channels per dwte block: its f32 sums, 16 KiB

// CUDA kernels

template <class T>
__global__ void embedding_forward_kernel(T* out, const std::int32_t* tokens, const T* wte,
                                         const T* wpe, std::size_t rows, std::size_t T_len,
                                         std::size_t C, std::int64_t vocab) {
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * C) return;
  std::size_t row = i / C, c = i % C;
  std::int32_t token = tokens[row];
  if (token < 0 || token >= vocab) {  // a bad id must not read outside wte
    out[i] = from_f32<T>(0.0f);
    return;
  }
  float value = to_f32(wte[static_cast<std::size_t>(token) * C + c]);
  if (wpe) value += to_f32(wpe[(row % T_len) * C + c]);
  out[i] = from_f32<T>(value);
}

// dwte: one block per (position, channel range). Only the first position holding a token does
// work: it finds every position with that token in ascending order (a warp ballot per 32
// candidates, so the scan costs a few instructions per 256 tokens), sums their dout rows in f32
// in that order (a shared f32 sum per channel, held by the thread that owns the channel) and adds
// the sum to the gradient row once. No atomics: the same on every run and equal to the host
// reference bit for bit, and a bf16/f16 gradient is rounded once per call.
template <class T, class G>
__global__ void embedding_backward_wte_kernel(G* dwte, const T* dout, const std::int32_t* tokens,
                                              std::size_t rows, std::size_t C, std::int64_t vocab) {
  constexpr unsigned kWarps = kEmbeddingBlock / 32;
  __shared__ unsigned match_bits[kWarps];
  __shared__ std::uint32_t matches[kEmbeddingBlock];
  __shared__ unsigned match_count;
  extern __shared__ float sums[];  // kEmbeddingChannels
  const std::size_t row = blockIdx.x;
  const std::int32_t token = tokens[row];
  if (token < 0 || token >= vocab) return;  // forward wrote zeros: nothing flows back
  for (std::size_t j0 = 0; j0 < row; j0 += blockDim.x) {
    const std::size_t j = j0 + threadIdx.x;
    if (__syncthreads_or(j < row && tokens[j] == token)) return;  // an earlier position sums it
  }
  const std::size_t c0 = static_cast<std::size_t>(blockIdx.y) * kEmbeddingChannels;
  const std::size_t c1 = min(C, c0 + kEmbeddingChannels);
  for (std::size_t c = c0 + threadIdx.x; c < c1; c += blockDim.x) sums[c - c0] = 0.0f;
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (std::size_t j0 = row; j0 < rows; j0 += blockDim.x) {
    const std::size_t j = j0 + threadIdx.x;
    const unsigned bits = __ballot_sync(0xffffffffu, j < rows && tokens[j] == token);
    if (lane == 0) match_bits[warp] = bits;
    __syncthreads();
    if (threadIdx.x == 0) {  // the matches of these 256 positions, in ascending order
      unsigned n = 0;
      for (unsigned w = 0; w < kWarps; ++w) {
        for (unsigned b = match_bits[w]; b != 0; b &= b - 1)
          matches[n++] = static_cast<std::uint32_t>(w * 32 + __ffs(b) - 1);
      }
      match_count = n;
    }
    __syncthreads();
    const unsigned n = match_count;
    for (std::size_t c = c0 + threadIdx.x; c < c1; c += blockDim.x) {
      float sum = sums[c - c0];
      for (unsigned k = 0; k < n; ++k) sum += to_f32(dout[(j0 + matches[k]) * C + c]);
      sums[c - c0] = sum;
    }
    __syncthreads();
  }
  for (std::size_t c = c0 + threadIdx.x; c < c1; c += blockDim.x) {
    G& g = dwte[static_cast<std::size_t>(token) * C + c];
    g = from_f32<G>(to_f32(g) + sums[c - c0]);
  }
}

// dwpe: one thread per (t, c), summing over the batch in order.
template <class T, class G>
__global__ void embedding_backward_wpe_kernel(G* dwpe, const T* dout, std::size_t batch,
                                              std::size_t T_len, std::size_t C) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= T_len * C) return;
  float sum = 0.0f;
  for (std::size_t b = 0; b < batch; ++b) sum += to_f32(dout[b * T_len * C + i]);
  dwpe[i] = from_f32<G>(to_f32(dwpe[i]) + sum);
}

// kernel launchers

namespace cuda {

constexpr unsigned kBlock = 256;

void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& wte, const Tensor& wpe,
                       memory::StreamHandle stream) {
  std::size_t rows = static_cast<std::size_t>(tokens.numel());
  std::size_t T_len = static_cast<std::size_t>(tokens.dim(1));
  std::size_t C = static_cast<std::size_t>(wte.dim(1));
  if (rows * C == 0) return;
  dispatch_float(wte.dtype(), "embedding_forward", [&](auto zero) {
    using T = decltype(zero);
    embedding_forward_kernel<T><<<ceil_div(rows * C, kBlock), kBlock, 0, as_cuda_stream(stream)>>>(
        out.data_as<T>(), tokens.data_as<const std::int32_t>(), wte.data_as<const T>(),
        wpe.defined() ? wpe.data_as<const T>() : nullptr, rows, T_len, C, wte.dim(0));
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

void embedding_backward(Tensor& dwte, Tensor& dwpe, const Tensor& dout, const Tensor& tokens,
                        memory::StreamHandle stream) {
  const std::size_t batch = static_cast<std::size_t>(tokens.dim(0));
  const std::size_t T_len = static_cast<std::size_t>(tokens.dim(1));
  const std::size_t rows = batch * T_len;
  const std::size_t C = static_cast<std::size_t>(dwte.dim(1));
  if (rows * C == 0) return;
  cudaStream_t s = as_cuda_stream(stream);
  dispatch_float(dout.dtype(), "embedding_backward", [&](auto dout_zero) {
    using T = decltype(dout_zero);
    dispatch_float(dwte.dtype(), "embedding_backward", [&](auto grad_zero) {
      using G = decltype(grad_zero);
      const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(ceil_div(C, kEmbeddingChannels)));
      const std::size_t sums_bytes = std::min(C, kEmbeddingChannels) * sizeof(float);
      embedding_backward_wte_kernel<T, G><<<grid, kEmbeddingBlock, sums_bytes, s>>>(
          dwte.data_as<G>(), dout.data_as<const T>(), tokens.data_as<const std::int32_t>(), rows, C, dwte.dim(0));
      OOMLAB_CUDA_CHECK_LAUNCH();
    });
    if (!dwpe.defined()) return;
    dispatch_float(dwpe.dtype(), "embedding_backward", [&](auto grad_zero) {
      using G = decltype(grad_zero);
      embedding_backward_wpe_kernel<T, G><<<ceil_div(T_len * C, kBlock), kBlock, 0, s>>>(
          dwpe.data_as<G>(), dout.data_as<const T>(), batch, T_len, C);
      OOMLAB_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
