// Fill: one element pattern repeated over a buffer (Tensor::fill on cuda).
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/core/fill.hpp"
#include "kernels/core/launch.cuh"

namespace oomlab {

// CUDA kernels

template <class Element>
__global__ void fill_kernel(Element* dst, std::size_t count, Element value) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    dst[i] = value;
  }
}

// kernel launchers

namespace {

template <class Element>
void launch_fill(void* dst, std::size_t count, std::uint64_t pattern, cudaStream_t stream) {
  Element value;
  std::memcpy(&value, &pattern, sizeof value);  // little-endian: the low bytes
  constexpr unsigned kBlock = 256;
  // Grid-stride loop: cap the grid, enough blocks to fill every SM several times over.
  unsigned grid = ceil_div(count, kBlock);
  if (grid > 65535u * 8) grid = 65535u * 8;
  fill_kernel<Element><<<grid, kBlock, 0, stream>>>(static_cast<Element*>(dst), count, value);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void fill_pattern_cuda(void* dst, std::size_t count, std::size_t element_bytes,
                       std::uint64_t pattern, memory::StreamHandle stream) {
  if (count == 0) return;
  cudaStream_t cuda_stream = as_cuda_stream(stream);
  switch (element_bytes) {
    case 1: return launch_fill<std::uint8_t>(dst, count, pattern, cuda_stream);
    case 2: return launch_fill<std::uint16_t>(dst, count, pattern, cuda_stream);
    case 4: return launch_fill<std::uint32_t>(dst, count, pattern, cuda_stream);
    case 8: return launch_fill<std::uint64_t>(dst, count, pattern, cuda_stream);
  }
  throw std::invalid_argument("fill_pattern_cuda: element size " + std::to_string(element_bytes) +
                              " is not 1, 2, 4 or 8");
}

}  // namespace oomlab
