// GELU: CUDA kernels (element-wise maps, 128-bit accesses) and launchers.
#include "kernels/core/elementwise.cuh"
#include "kernels/transformer/gelu.hpp"
#include "kernels/transformer/gelu_math.hpp"

namespace oomlab::ops {

// CUDA kernels: functors for the shared element-wise map kernels.

struct GeluForward {
  __device__ float operator()(float x) const { return gelu_value(x); }
};
struct GeluBackward {
  __device__ float operator()(float dout, float x) const { return dout * gelu_derivative(x); }
};

// kernel launchers

namespace cuda {

void gelu_forward(Tensor& out, const Tensor& x, memory::StreamHandle stream) {
  dispatch_float(x.dtype(), "gelu_forward", [&](auto zero) {
    using T = decltype(zero);
    launch_map1(out.data_as<T>(), x.data_as<const T>(), static_cast<std::size_t>(x.numel()),
                GeluForward{}, as_cuda_stream(stream));
  });
}

void gelu_backward(Tensor& dx, const Tensor& dout, const Tensor& x, memory::StreamHandle stream) {
  dispatch_float(x.dtype(), "gelu_backward", [&](auto zero) {
    using T = decltype(zero);
    launch_map2(dx.data_as<T>(), dout.data_as<const T>(), x.data_as<const T>(),
                static_cast<std::size_t>(x.numel()), GeluBackward{}, as_cuda_stream(stream));
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
