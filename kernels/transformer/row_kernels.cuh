// Helpers for the row-wise kernels (LayerNorm, RMSNorm): one warp per row of C elements,
// V elements per access (V = 16 bytes / element size when C and the pointers allow it, else 1).
#pragma once
#include <cstddef>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"

namespace oomlab::ops {

constexpr unsigned kRowWarps = 8;  // rows per block

template <class T, int V>
struct alignas(sizeof(T) * V) RowVec {
  T v[V];
};

template <class T, int V>
__device__ __forceinline__ RowVec<T, V> load_row_vec(const T* p) {
  return *reinterpret_cast<const RowVec<T, V>*>(p);
}
template <class T, int V>
__device__ __forceinline__ void store_row_vec(T* p, const RowVec<T, V>& value) {
  *reinterpret_cast<RowVec<T, V>*>(p) = value;
}

template <class T>
bool row_vectorizable(int cols, std::initializer_list<const void*> pointers) {
  return cols % (16 / sizeof(T)) == 0 && aligned16(pointers);
}

// The one place that picks a row kernel's vector width: calls launch(integral_constant<int, V>)
// with V = 16 bytes of T when the rows and every pointer allow 128-bit accesses, else V = 1.
template <class T, class Launch>
void launch_with_row_width(int cols, std::initializer_list<const void*> pointers, Launch&& launch) {
  if (row_vectorizable<T>(cols, pointers)) {
    launch(std::integral_constant<int, 16 / sizeof(T)>{});
  } else {
    launch(std::integral_constant<int, 1>{});
  }
}

inline int checked_int(std::int64_t value, const char* what) {
  if (value > std::numeric_limits<int>::max()) {
    throw std::invalid_argument(std::string(what) + " exceeds the int range of the kernel");
  }
  return static_cast<int>(value);
}

// Enough blocks to fill the GPU a few times over; each block loops over its rows, so the
// per-block column sums of the backward are added to global memory only once per block.
inline unsigned row_reduction_grid(int rows) {
  unsigned wanted = ceil_div(static_cast<std::size_t>(rows), kRowWarps);
  return wanted < 1024u ? wanted : 1024u;
}

// Opts in to more than 48 KiB of dynamic shared memory when a wide row needs it.
template <class Kernel>
void allow_shared_bytes(Kernel kernel, std::size_t bytes, const char* op) {
  if (bytes <= 48 * 1024) return;
  int device = 0, limit = 0;
  OOMLAB_CUDA_CHECK(cudaGetDevice(&device));
  OOMLAB_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (bytes > static_cast<std::size_t>(limit)) {
    throw std::invalid_argument(std::string(op) + ": row too wide for the shared-memory column sums");
  }
  OOMLAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(bytes)));
}

}  // namespace oomlab::ops
