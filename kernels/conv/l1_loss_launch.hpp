// CUDA launchers of the L1 loss (l1_loss.cu); host-only declarations.
#pragma once
#include <cstdint>

#include "harness/memory/source.hpp"
#include "kernels/core/dtype.hpp"

namespace oomlab::ops::detail {

// loss[0] = mean |a - b|; partials holds plan_sum(count).count floats.
void l1_loss_forward_cuda(DType dtype, const void* a, const void* b, std::int64_t count,
                          float* partials, float* loss, memory::StreamHandle stream);
// da = scale * sign(a - b), db (may be null) = -da.
void l1_loss_backward_cuda(DType dtype, const void* a, const void* b, std::int64_t count,
                           float scale, void* da, void* db, memory::StreamHandle stream);

}  // namespace oomlab::ops::detail
