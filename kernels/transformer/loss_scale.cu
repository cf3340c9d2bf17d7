// Loss scaling: CUDA kernels and launchers.
#include <cmath>

#include "kernels/core/elementwise.cuh"
#include "kernels/transformer/loss_scale.hpp"

namespace oomlab::ops {

// CUDA kernels

struct MultiplyBy {
  float factor;
  __device__ float operator()(float x) const { return x * factor; }
};

// Several threads may set the flag; they all write the same 1, so the race is benign.
template <class T>
__global__ void unscale_check_kernel(T* grad, std::size_t n, float inv_scale, float* found_inf) {
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float value = to_f32(grad[i]) * inv_scale;
  if (!isfinite(value)) *found_inf = 1.0f;
  grad[i] = from_f32<T>(value);
}

// kernel launchers

namespace cuda {

void scale(Tensor& t, float factor, memory::StreamHandle stream) {
  dispatch_float(t.dtype(), "scale", [&](auto zero) {
    using T = decltype(zero);
    launch_map1(t.data_as<T>(), t.data_as<const T>(), static_cast<std::size_t>(t.numel()),
                MultiplyBy{factor}, as_cuda_stream(stream));
  });
}

void unscale_and_check(Tensor& grad, float inv_scale, Tensor& found_inf, memory::StreamHandle stream) {
  std::size_t n = static_cast<std::size_t>(grad.numel());
  if (n == 0) return;
  dispatch_float(grad.dtype(), "unscale_and_check", [&](auto zero) {
    using T = decltype(zero);
    constexpr unsigned kBlock = 256;
    unscale_check_kernel<T><<<ceil_div(n, kBlock), kBlock, 0, as_cuda_stream(stream)>>>(
        grad.data_as<T>(), n, inv_scale, found_inf.data_as<float>());
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
