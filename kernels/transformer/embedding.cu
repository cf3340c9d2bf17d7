// Embedding: CUDA kernels (one thread per output element) and launchers.
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/transformer/embedding.hpp"

namespace oomlab::ops {

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

template <class T>
__global__ void embedding_backward_kernel(float* dwte, float* dwpe, const T* dout,
                                          const std::int32_t* tokens, std::size_t rows,
                                          std::size_t T_len, std::size_t C, std::int64_t vocab) {
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * C) return;
  std::size_t row = i / C, c = i % C;
  std::int32_t token = tokens[row];
  float g = to_f32(dout[i]);
  if (token >= 0 && token < vocab) atomicAdd(&dwte[static_cast<std::size_t>(token) * C + c], g);
  if (dwpe) atomicAdd(&dwpe[(row % T_len) * C + c], g);
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
  std::size_t rows = static_cast<std::size_t>(tokens.numel());
  std::size_t T_len = static_cast<std::size_t>(tokens.dim(1));
  std::size_t C = static_cast<std::size_t>(dwte.dim(1));
  if (rows * C == 0) return;
  dispatch_float(dout.dtype(), "embedding_backward", [&](auto zero) {
    using T = decltype(zero);
    embedding_backward_kernel<T><<<ceil_div(rows * C, kBlock), kBlock, 0, as_cuda_stream(stream)>>>(
        dwte.data_as<float>(), dwpe.defined() ? dwpe.data_as<float>() : nullptr,
        dout.data_as<const T>(), tokens.data_as<const std::int32_t>(), rows, T_len, C, dwte.dim(0));
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
