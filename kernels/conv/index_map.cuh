// A grid-stride kernel calling op(i) for every index i < count, for the conv-area kernels that
// are not value maps (gathers like pixel shuffle, the split sum of conv backward-weight): the
// functor does its own loads and store. Value maps use kernels/core/elementwise.cuh.
#pragma once
#include <cstdint>

#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"

namespace oomlab::ops::detail {

constexpr unsigned kIndexMapThreads = 256;
constexpr unsigned kIndexMapMaxBlocks = 65535u * 8;  // enough to fill every SM many times over

template <class Op>
__global__ void __launch_bounds__(kIndexMapThreads) index_map_kernel(Op op, std::int64_t count) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kIndexMapThreads;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kIndexMapThreads + threadIdx.x;
       i < count; i += stride) {
    op(i);
  }
}

template <class Op>
void launch_index_map(Op op, std::int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  unsigned grid = ceil_div(static_cast<std::size_t>(count), kIndexMapThreads);
  if (grid > kIndexMapMaxBlocks) grid = kIndexMapMaxBlocks;
  index_map_kernel<<<grid, kIndexMapThreads, 0, stream>>>(op, count);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace oomlab::ops::detail
