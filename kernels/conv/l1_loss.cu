// L1 loss: the forward reuses the deterministic sum kernels; the backward is an element-wise map.
#include <limits>

#include "kernels/conv/activation_math.hpp"
#include "kernels/conv/l1_loss_launch.hpp"
#include "kernels/conv/reduce_kernels.cuh"
#include "kernels/core/elementwise.cuh"

namespace oomlab::ops::detail {

namespace {

// CUDA kernels (functors)

template <class T>
struct AbsDifference {
  const T* a;
  const T* b;
  __device__ float operator()(std::int64_t i) const { return fabsf(to_f32(a[i]) - to_f32(b[i])); }
};

struct L1Gradient {
  float scale;  // +-scale per element: grad_loss / numel, negated for b
  __device__ float operator()(float a, float b) const { return l1_grad(a, b, scale); }
};

}  // namespace

// kernel launchers

void l1_loss_forward_cuda(DType dtype, const void* a, const void* b, std::int64_t count,
                          float* partials, float* loss, memory::StreamHandle stream) {
  dispatch_float(dtype, "l1_loss_forward", [&](auto zero) {
    using T = decltype(zero);
    const float scale = count > 0 ? 1.0f / static_cast<float>(count) : std::numeric_limits<float>::quiet_NaN();
    launch_sum(AbsDifference<T>{static_cast<const T*>(a), static_cast<const T*>(b)}, count, scale,
               partials, loss, as_cuda_stream(stream));
  });
}

void l1_loss_backward_cuda(DType dtype, const void* a, const void* b, std::int64_t count,
                           float scale, void* da, void* db, memory::StreamHandle stream) {
  dispatch_float(dtype, "l1_loss_backward", [&](auto zero) {
    using T = decltype(zero);
    const auto n = static_cast<std::size_t>(count);
    launch_map2(static_cast<T*>(da), static_cast<const T*>(a), static_cast<const T*>(b), n,
                L1Gradient{scale}, as_cuda_stream(stream));
    if (db != nullptr) {
      launch_map2(static_cast<T*>(db), static_cast<const T*>(a), static_cast<const T*>(b), n,
                  L1Gradient{-scale}, as_cuda_stream(stream));
    }
  });
}

}  // namespace oomlab::ops::detail
