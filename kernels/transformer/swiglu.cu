// SwiGLU: CUDA kernels and launchers.
#include "kernels/core/elementwise.cuh"
#include "kernels/transformer/swiglu.hpp"
#include "kernels/transformer/swiglu_math.hpp"

namespace oomlab::ops {

// CUDA kernels

struct SwigluForward {
  __device__ float operator()(float gate, float up) const { return silu_value(gate) * up; }
};

// Two outputs per element, so not a map: one element per thread.
template <class T>
__global__ void swiglu_backward_kernel(T* dgate, T* dup, const T* dout, const T* gate, const T* up,
                                       std::size_t n) {
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float g = to_f32(gate[i]);
  float u = to_f32(up[i]);
  float d = to_f32(dout[i]);
  dgate[i] = from_f32<T>(d * u * silu_derivative(g));
  dup[i] = from_f32<T>(d * silu_value(g));
}

// kernel launchers

namespace cuda {

void swiglu_forward(Tensor& out, const Tensor& gate, const Tensor& up, memory::StreamHandle stream) {
  dispatch_float(gate.dtype(), "swiglu_forward", [&](auto zero) {
    using T = decltype(zero);
    launch_map2(out.data_as<T>(), gate.data_as<const T>(), up.data_as<const T>(),
                static_cast<std::size_t>(gate.numel()), SwigluForward{}, as_cuda_stream(stream));
  });
}

void swiglu_backward(Tensor& dgate, Tensor& dup, const Tensor& dout, const Tensor& gate,
                     const Tensor& up, memory::StreamHandle stream) {
  std::size_t n = static_cast<std::size_t>(gate.numel());
  if (n == 0) return;
  dispatch_float(gate.dtype(), "swiglu_backward", [&](auto zero) {
    using T = decltype(zero);
    constexpr unsigned kBlock = 256;
    swiglu_backward_kernel<T><<<ceil_div(n, kBlock), kBlock, 0, as_cuda_stream(stream)>>>(
        dgate.data_as<T>(), dup.data_as<T>(), dout.data_as<const T>(), gate.data_as<const T>(),
        up.data_as<const T>(), n);
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
