// Helpers for the row-wise kernels (LayerNorm, RMSNorm): one warp per row of C elements,
// V elements per access (V = 16 bytes / element size when C and the pointers allow it, else 1).
#pragma once
#include <cstddef>
#include <cstdint>
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

// Widest row (in columns) the register-accumulating row kernels take: 32 f32 sums per lane
// for each of their column-sum arrays.
constexpr int kRegisterColumns = 1024;

// Calls launch(integral_constant<int, N>) with N == chunks, for 1 <= chunks <= MAX (a run-time
// chunk count turned into the compile-time register-array size of a row kernel).
template <int MAX, class Launch>
void dispatch_chunks(int chunks, Launch&& launch) {
  if constexpr (MAX >= 1) {
    if (chunks == MAX) return launch(std::integral_constant<int, MAX>{});
    return dispatch_chunks<MAX - 1>(chunks, launch);
  }
  throw std::logic_error("dispatch_chunks: chunk count out of range");
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

// Blocks of `kernel` that can be resident on the GPU at once. An occupancy query: call it once
// per kernel (a static at the launch site), not per launch.
template <class Kernel>
unsigned resident_blocks(Kernel kernel, std::size_t shared_bytes = 0) {
  const int sms = current_device_sm_count();
  int per_sm = 0;
  OOMLAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kRowWarps * 32, shared_bytes));
  return static_cast<unsigned>(sms) * static_cast<unsigned>(per_sm > 0 ? per_sm : 1);
}

// Blocks for a kernel whose warps loop over rows keeping per-column sums in registers: as many
// as can be resident at once (more would only add per-block column writes), at most one per
// kRowWarps rows.
inline unsigned resident_row_grid(unsigned resident, int rows) {
  const unsigned wanted = ceil_div(static_cast<std::size_t>(rows), kRowWarps);
  return wanted < resident ? wanted : resident;
}

// Per-lane column sums of a row kernel with register accumulators: lane owns columns
// (chunk * 32 + lane) * V + k. Adds every warp's sums into block_sums[0, cols) one warp after
// another (a fixed order, so the block's result is deterministic); block_sums needs no zeroing,
// warp 0 stores. Must be called by all threads of the block; ends with a barrier.
template <int CHUNKS, int V>
__device__ void add_columns_in_warp_order(float* block_sums, const float (&sums)[CHUNKS][V], int cols) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int w = 0; w < static_cast<int>(kRowWarps); ++w) {
    if (warp == w) {
#pragma unroll
      for (int j = 0; j < CHUNKS; ++j) {
        const int c = (j * 32 + lane) * V;
        if (c >= cols) continue;
#pragma unroll
        for (int k = 0; k < V; ++k) block_sums[c + k] = (w == 0 ? 0.0f : block_sums[c + k]) + sums[j][k];
      }
    }
    __syncthreads();
  }
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
