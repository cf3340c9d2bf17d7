// Pixel shuffle: one CUDA kernel per direction, as functors of index_map_kernel, and the launcher.
// Where the low side's channels come in whole 16-byte packs (the SR-GAN's 256 channels), a
// thread moves one pack: one 16-byte load (forward) or store (backward) on the low side and its
// elements one by one on the high side, where the warp's threads touch consecutive channels, so
// both sides coalesce, with 32-bit FastDivmod indices once per pack. Else one element per thread
// (six 64-bit divisions each: compute-bound on a 1 GB tensor).
#include "kernels/conv/fast_divmod.cuh"
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

// One 16-byte pack of low-side channels [k0, k0 + kVec) of one low pixel; channel k = (c*r + i)*r + j
// of pixel (h, w) is channel c of high pixel (h*r + i, w*r + j).
template <class T, bool kForward>
struct ShufflePacks {
  static constexpr int kVec = Pack128<T>::kSize;
  const T* src;
  T* dst;
  int low_channels, high_channels, factor, high_w;
  FastDivmod div_packs, div_w, div_h, div_rr, div_r;
  __device__ void operator()(std::int64_t index) const {
    int pixel, pack, nh, w, n, h;
    div_packs.divmod(static_cast<int>(index), pixel, pack);
    div_w.divmod(pixel, nh, w);
    div_h.divmod(nh, n, h);
    const std::int64_t low_at = static_cast<std::int64_t>(pixel) * low_channels + pack * kVec;
    // High pixel (h*r, w*r) of image n: row (n*H + h)*r of the high image stack.
    const std::int64_t high_corner =
        (static_cast<std::int64_t>(nh) * factor * high_w + static_cast<std::int64_t>(w) * factor) * high_channels;
    Pack128<T> values;
    if constexpr (kForward) values = load128(src + low_at);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      int c, ij, i, j;
      div_rr.divmod(pack * kVec + e, c, ij);
      div_r.divmod(ij, i, j);
      const std::int64_t high_at = high_corner + (static_cast<std::int64_t>(i) * high_w + j) * high_channels + c;
      if constexpr (kForward) {
        dst[high_at] = values.values[e];
      } else {
        values.values[e] = src[high_at];
      }
    }
    if constexpr (!kForward) store128(dst + low_at, values);
  }
};

template <class T, bool kForward>
void launch_shuffle_packs(const PixelShuffleGeometry& g, const T* src, T* dst, cudaStream_t stream) {
  const int r = g.factor;
  const int low_channels = static_cast<int>(g.c) * r * r;
  ShufflePacks<T, kForward> op{src, dst, low_channels, static_cast<int>(g.c), r, static_cast<int>(g.w) * r,
                               FastDivmod(low_channels / ShufflePacks<T, kForward>::kVec),
                               FastDivmod(static_cast<int>(g.w)), FastDivmod(static_cast<int>(g.h)),
                               FastDivmod(r * r), FastDivmod(r)};
  launch_index_map(op, g.n * g.h * g.w * low_channels / ShufflePacks<T, kForward>::kVec, stream);
}

}  // namespace

// kernel launcher

void pixel_shuffle_cuda(DType dtype, const PixelShuffleGeometry& g, bool forward, const void* src,
                        void* dst, memory::StreamHandle stream) {
  const std::int64_t count = g.n * g.h * g.w * g.c * g.factor * g.factor;
  dispatch_float(dtype, "pixel_shuffle", [&](auto zero) {
    using T = decltype(zero);
    const cudaStream_t cuda_stream = as_cuda_stream(stream);
    const std::int64_t low_channels = g.c * g.factor * g.factor;
    // Packs: whole 16-byte packs per low pixel, aligned, and every index within FastDivmod's 2^31.
    if (low_channels % Pack128<T>::kSize == 0 && aligned16({src, dst}) && count < (std::int64_t{1} << 31)) {
      if (forward) {
        launch_shuffle_packs<T, true>(g, static_cast<const T*>(src), static_cast<T*>(dst), cuda_stream);
      } else {
        launch_shuffle_packs<T, false>(g, static_cast<const T*>(src), static_cast<T*>(dst), cuda_stream);
      }
      return;
    }
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
