// Pinned host memory through the CUDA runtime (compiled only in CUDA builds).
#include <cuda_runtime_api.h>

#include "harness/device/cuda_check.hpp"
#include "scenarios/models/transformer/host_state_buffer.hpp"

namespace oomlab::model {

void* pinned_host_alloc(std::size_t bytes) {
  void* ptr = nullptr;
  OOMLAB_CUDA_CHECK(cudaHostAlloc(&ptr, bytes, cudaHostAllocDefault));
  return ptr;
}

void pinned_host_free(void* ptr) { cudaFreeHost(ptr); }

}  // namespace oomlab::model
