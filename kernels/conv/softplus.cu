// Softplus: CUDA kernels as functors of the core element-wise maps, and their launchers.
#include "kernels/conv/activation_math.hpp"
#include "kernels/conv/softplus_launch.hpp"
#include "kernels/core/elementwise.cuh"

namespace oomlab::ops::detail {

// CUDA kernels (functors)

struct SoftplusForward {
  __device__ float operator()(float x) const { return softplus_value(x); }
};
struct SoftplusBackward {
  __device__ float operator()(float x, float dy) const { return dy * sigmoid_value(x); }
};

// kernel launchers

void softplus_forward_cuda(DType dtype, const void* x, void* y, std::int64_t count,
                           memory::StreamHandle stream) {
  dispatch_float(dtype, "softplus_forward", [&](auto zero) {
    using T = decltype(zero);
    launch_map1(static_cast<T*>(y), static_cast<const T*>(x), static_cast<std::size_t>(count),
                SoftplusForward{}, as_cuda_stream(stream));
  });
}

void softplus_backward_cuda(DType dtype, const void* x, const void* dy, void* dx,
                            std::int64_t count, memory::StreamHandle stream) {
  dispatch_float(dtype, "softplus_backward", [&](auto zero) {
    using T = decltype(zero);
    launch_map2(static_cast<T*>(dx), static_cast<const T*>(x), static_cast<const T*>(dy),
                static_cast<std::size_t>(count), SoftplusBackward{}, as_cuda_stream(stream));
  });
}

}  // namespace oomlab::ops::detail
