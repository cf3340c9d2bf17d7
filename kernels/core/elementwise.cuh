// Memory-bound element-wise maps: each thread handles 8 consecutive elements with the widest
// loads the alignment allows (one 128-bit access per 8 bf16, two per 8 f32), the arithmetic in
// f32, the result rounded once to the output type. Unaligned views fall back to scalar access.
#pragma once
#include <cstddef>

#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"

namespace oomlab {

constexpr int kMapWidth = 8;
constexpr unsigned kMapBlock = 256;

template <class T>
struct alignas(sizeof(T) * kMapWidth) MapVec {
  T v[kMapWidth];
};

template <class Out, class In, class Fn>
__global__ void map1_kernel(Out* out, const In* in, std::size_t n, bool vectorized, Fn fn) {
  std::size_t base = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kMapWidth;
  if (base >= n) return;
  if (vectorized && base + kMapWidth <= n) {
    MapVec<In> a = *reinterpret_cast<const MapVec<In>*>(in + base);
    MapVec<Out> r;
#pragma unroll
    for (int k = 0; k < kMapWidth; ++k) r.v[k] = from_f32<Out>(fn(to_f32(a.v[k])));
    *reinterpret_cast<MapVec<Out>*>(out + base) = r;
    return;
  }
  for (std::size_t i = base; i < n && i < base + kMapWidth; ++i) out[i] = from_f32<Out>(fn(to_f32(in[i])));
}

template <class Out, class In, class Fn>
__global__ void map2_kernel(Out* out, const In* in0, const In* in1, std::size_t n, bool vectorized,
                            Fn fn) {
  std::size_t base = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kMapWidth;
  if (base >= n) return;
  if (vectorized && base + kMapWidth <= n) {
    MapVec<In> a = *reinterpret_cast<const MapVec<In>*>(in0 + base);
    MapVec<In> b = *reinterpret_cast<const MapVec<In>*>(in1 + base);
    MapVec<Out> r;
#pragma unroll
    for (int k = 0; k < kMapWidth; ++k) r.v[k] = from_f32<Out>(fn(to_f32(a.v[k]), to_f32(b.v[k])));
    *reinterpret_cast<MapVec<Out>*>(out + base) = r;
    return;
  }
  for (std::size_t i = base; i < n && i < base + kMapWidth; ++i) {
    out[i] = from_f32<Out>(fn(to_f32(in0[i]), to_f32(in1[i])));
  }
}

inline bool map_aligned(const void* p, std::size_t element_bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % (element_bytes * kMapWidth) == 0;
}

// out[i] = fn(in[i])
template <class Out, class In, class Fn>
void launch_map1(Out* out, const In* in, std::size_t n, Fn fn, cudaStream_t stream) {
  if (n == 0) return;
  bool vectorized = map_aligned(out, sizeof(Out)) && map_aligned(in, sizeof(In));
  map1_kernel<<<ceil_div(ceil_div(n, kMapWidth), kMapBlock), kMapBlock, 0, stream>>>(out, in, n,
                                                                                   vectorized, fn);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

// out[i] = fn(in0[i], in1[i])
template <class Out, class In, class Fn>
void launch_map2(Out* out, const In* in0, const In* in1, std::size_t n, Fn fn, cudaStream_t stream) {
  if (n == 0) return;
  bool vectorized = map_aligned(out, sizeof(Out)) && map_aligned(in0, sizeof(In)) &&
                    map_aligned(in1, sizeof(In));
  map2_kernel<<<ceil_div(ceil_div(n, kMapWidth), kMapBlock), kMapBlock, 0, stream>>>(
      out, in0, in1, n, vectorized, fn);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace oomlab
