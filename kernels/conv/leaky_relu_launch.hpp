// CUDA launchers of leaky_relu (leaky_relu.cu); host-only declarations.
#pragma once
#include <cstdint>

#include "harness/memory/source.hpp"
#include "kernels/core/dtype.hpp"

namespace oomlab::ops::detail {

void leaky_relu_forward_cuda(DType dtype, const void* x, void* y, std::int64_t count, float slope,
                             memory::StreamHandle stream);
void leaky_relu_backward_cuda(DType dtype, const void* x_or_y, const void* dy, void* dx,
                              std::int64_t count, float slope, memory::StreamHandle stream);

}  // namespace oomlab::ops::detail
