// Pixel shuffle: one CUDA kernel per direction as element-wise functors over the destination
// (coalesced writes, gathered reads), and the launcher.
#include "kernels/conv/index_map.cuh"
#include "kernels/conv/pixel_shuffle_launch.hpp"

namespace oomlab::ops::detail {

namespace {

// Index of the low-resolution element feeding high-resolution element `hi_index`.
__device__ __forceinline__ std::int64_t low_index_of(const PixelShuffleGeometry& g,
                                                     std::int64_t hi_index) {
  const std::int64_t r = g.factor;
  const std::int64_t c = hi_index % g.c;
  std::int64_t rest = hi_index / g.c;
  const std::int64_t wo = rest % (g.w * r);
  rest /= g.w * r;
  const std::int64_t ho = rest % (g.h * r);
  const std::int64_t n = rest / (g.h * r);
  const std::int64_t low_channel = (c * r + ho % r) * r + wo % r;
  return ((n * g.h + ho / r) * g.w + wo / r) * (g.c * r * r) + low_channel;
}

// Index of the high-resolution element that low-resolution element `low_index` moves to.
__device__ __forceinline__ std::int64_t high_index_of(const PixelShuffleGeometry& g,
                                                      std::int64_t low_index) {
  const std::int64_t r = g.factor;
  const std::int64_t low_channels = g.c * r * r;
  const std::int64_t low_channel = low_index % low_channels;
  std::int64_t rest = low_index / low_channels;
  const std::int64_t w = rest % g.w;
  rest /= g.w;
  const std::int64_t h = rest % g.h;
  const std::int64_t n = rest / g.h;
  const std::int64_t c = low_channel / (r * r), i = (low_channel / r) % r, j = low_channel % r;
  return ((n * g.h * r + h * r + i) * (g.w * r) + w * r + j) * g.c + c;
}

// CUDA kernels (functors run by index_map_kernel)

template <class T>
struct ShuffleForward {  // high[i] = low[low_index_of(i)]
  PixelShuffleGeometry g;
  const T* low;
  T* high;
  __device__ void operator()(std::int64_t i) const { high[i] = low[low_index_of(g, i)]; }
};

template <class T>
struct ShuffleBackward {  // low[i] = high[high_index_of(i)]
  PixelShuffleGeometry g;
  const T* high;
  T* low;
  __device__ void operator()(std::int64_t i) const { low[i] = high[high_index_of(g, i)]; }
};

}  // namespace

// kernel launcher

void pixel_shuffle_cuda(DType dtype, const PixelShuffleGeometry& g, bool forward, const void* src,
                        void* dst, memory::StreamHandle stream) {
  const std::int64_t count = g.n * g.h * g.w * g.c * g.factor * g.factor;
  dispatch_float(dtype, "pixel_shuffle", [&](auto zero) {
    using T = decltype(zero);
    if (forward) {
      launch_index_map(ShuffleForward<T>{g, static_cast<const T*>(src), static_cast<T*>(dst)}, count,
                 as_cuda_stream(stream));
    } else {
      launch_index_map(ShuffleBackward<T>{g, static_cast<const T*>(src), static_cast<T*>(dst)}, count,
                 as_cuda_stream(stream));
    }
  });
}

}  // namespace oomlab::ops::detail
