// Test helper (dtype_gpu_convert.cu): f32 -> bf16/f16 with CUDA's intrinsics, device pointers.
#pragma once
#include <cstddef>
#include <cstdint>

#include "harness/memory/source.hpp"

namespace oomlab::testing {

void convert_with_cuda_intrinsics(const float* in, std::size_t n, std::uint16_t* bf16_out,
                                  std::uint16_t* f16_out, memory::StreamHandle stream);

}  // namespace oomlab::testing
