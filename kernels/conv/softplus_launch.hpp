// CUDA launchers of softplus (softplus.cu); host-only declarations.
#pragma once
#include <cstdint>

#include "harness/memory/source.hpp"
#include "kernels/core/dtype.hpp"

namespace oomlab::ops::detail {

void softplus_forward_cuda(DType dtype, const void* x, void* y, std::int64_t count,
                           memory::StreamHandle stream);
void softplus_backward_cuda(DType dtype, const void* x, const void* dy, void* dx,
                            std::int64_t count, memory::StreamHandle stream);

}  // namespace oomlab::ops::detail
