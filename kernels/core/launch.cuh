// CUDA-only launch helpers (include from .cu files only).
#pragma once
#include <cuda_runtime_api.h>

#include "harness/device/cuda_check.hpp"
#include "harness/memory/source.hpp"
#include "kernels/core/launch.hpp"

namespace oomlab {

// The allocator's opaque stream handle is a cudaStream_t on cuda.
inline cudaStream_t as_cuda_stream(memory::StreamHandle stream) {
  return reinterpret_cast<cudaStream_t>(stream);
}

}  // namespace oomlab
