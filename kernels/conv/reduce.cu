// CUDA launchers of the reductions (kernels in reduce_kernels.cuh, shared with other ops).
#include "kernels/conv/reduce_kernels.cuh"

namespace oomlab::ops::detail {

namespace {

template <class T>
struct LoadAsF32 {
  const T* x;
  __device__ float operator()(std::int64_t i) const { return to_f32(x[i]); }
};

}  // namespace

void sum_cuda(DType dtype, const void* x, std::int64_t numel, float scale, float* partials,
              float* out, memory::StreamHandle stream) {
  dispatch_float(dtype, "sum", [&](auto zero) {
    using T = decltype(zero);
    launch_sum(LoadAsF32<T>{static_cast<const T*>(x)}, numel, scale, partials, out,
               as_cuda_stream(stream));
  });
}

void channel_sum_cuda(DType dtype, const void* x, std::int64_t rows, std::int64_t channels,
                      float scale, float* partials, DType out_dtype, void* out,
                      memory::StreamHandle stream) {
  dispatch_float(dtype, "channel_sum", [&](auto zero) {
    using T = decltype(zero);
    dispatch_float(out_dtype, "channel_sum", [&](auto out_zero) {
      using TOut = decltype(out_zero);
      launch_channel_sum(static_cast<const T*>(x), rows, channels, scale, partials,
                         static_cast<TOut*>(out), as_cuda_stream(stream));
    });
  });
}

}  // namespace oomlab::ops::detail
