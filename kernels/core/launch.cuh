// CUDA-only launch helpers (include from .cu files only).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "harness/memory/cuda_check.hpp"
#include "harness/memory/source.hpp"
#include "kernels/core/engines.hpp"
#include "kernels/core/launch.hpp"

namespace oomlab {

// The allocator's opaque stream handle is a cudaStream_t on cuda.
inline cudaStream_t as_cuda_stream(memory::StreamHandle stream) {
  return reinterpret_cast<cudaStream_t>(stream);
}

// Opts a kernel into more than 48 KiB of dynamic shared memory. Asked on every launch rather than
// cached: the setting belongs to the current device, and the call is cheap next to a launch.
// More than the GPU allows (ops::max_shared_bytes_per_block()) is one clear line, not
// cudaErrorInvalidValue.
template <class Kernel>
void allow_shared_bytes(Kernel kernel, std::size_t bytes) {
  ops::require_shared_bytes("a kernel", bytes);
  OOMLAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(bytes)));
}

// Streaming multiprocessors of the current device (grid sizes that fill the GPU).
inline int current_device_sm_count() {
  int device = 0, sms = 0;
  OOMLAB_CUDA_CHECK(cudaGetDevice(&device));
  OOMLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

}  // namespace oomlab
