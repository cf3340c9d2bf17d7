// LeakyReLU (and ReLU, slope 0): CUDA kernels as functors of the core element-wise maps, and
// their launchers.
#include "kernels/conv/activation_math.hpp"
#include "kernels/conv/leaky_relu_launch.hpp"
#include "kernels/core/elementwise.cuh"

namespace oomlab::ops::detail {

// CUDA kernels (functors)

struct LeakyReluForward {
  float slope;
  __device__ float operator()(float x) const { return leaky_relu_value(x, slope); }
};
struct LeakyReluBackward {
  float slope;
  __device__ float operator()(float x_or_y, float dy) const { return leaky_relu_grad(x_or_y, dy, slope); }
};

// kernel launchers

void leaky_relu_forward_cuda(DType dtype, const void* x, void* y, std::int64_t count, float slope,
                             memory::StreamHandle stream) {
  dispatch_float(dtype, "leaky_relu_forward", [&](auto zero) {
    using T = decltype(zero);
    launch_map1(static_cast<T*>(y), static_cast<const T*>(x), static_cast<std::size_t>(count),
                LeakyReluForward{slope}, as_cuda_stream(stream));
  });
}

void leaky_relu_backward_cuda(DType dtype, const void* x_or_y, const void* dy, void* dx,
                              std::int64_t count, float slope, memory::StreamHandle stream) {
  dispatch_float(dtype, "leaky_relu_backward", [&](auto zero) {
    using T = decltype(zero);
    launch_map2(static_cast<T*>(dx), static_cast<const T*>(x_or_y), static_cast<const T*>(dy),
                static_cast<std::size_t>(count), LeakyReluBackward{slope}, as_cuda_stream(stream));
  });
}

}  // namespace oomlab::ops::detail
