// Device-side element access for the float dtypes: load as f32, store rounded, 128-bit packs
// for memory-bound kernels, and a switch from DType to the C++ element type.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "kernels/core/dtype.hpp"

namespace oomlab {

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }

template <class T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half(v); }

// 16 bytes of T, loaded and stored as one int4 (the widest global access).
template <class T>
struct alignas(16) Pack128 {
  static constexpr int kSize = 16 / sizeof(T);
  T values[kSize];
};

template <class T>
__device__ __forceinline__ Pack128<T> load128(const T* p) {
  Pack128<T> pack;
  *reinterpret_cast<int4*>(&pack) = *reinterpret_cast<const int4*>(p);
  return pack;
}
template <class T>
__device__ __forceinline__ void store128(T* p, const Pack128<T>& pack) {
  *reinterpret_cast<int4*>(p) = *reinterpret_cast<const int4*>(&pack);
}

// The 16 bytes of T at `source`, of which only the first `count` exist (fewer than a whole
// vector at a run's end; zeros after them). `whole`: the run is whole vectors, one 16-byte load.
template <class T>
__device__ __forceinline__ Pack128<T> load128_partial(const T* source, int count, bool whole) {
  if (whole) return load128(source);
  Pack128<T> pack;
#pragma unroll
  for (int e = 0; e < Pack128<T>::kSize; ++e) pack.values[e] = e < count ? source[e] : from_f32<T>(0.0f);
  return pack;
}

// True when every pointer is 16-byte aligned (slices and views may not be).
inline bool aligned16(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers) {
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return false;
  }
  return true;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  return v;
}

// Calls fn(T{}) with T the element type of a float dtype.
template <class Fn>
void dispatch_float(DType dtype, const char* op, Fn&& fn) {
  switch (dtype) {
    case DType::f32: fn(float{}); return;
    case DType::bf16: fn(__nv_bfloat16{}); return;
    case DType::f16: fn(__half{}); return;
    default: break;
  }
  throw std::invalid_argument(std::string(op) + ": dtype " + dtype_name(dtype) + " has no CUDA kernel");
}

}  // namespace oomlab
