// CUDA launcher of pixel shuffle (pixel_shuffle.cu); host-only declaration.
#pragma once
#include <cstdint>

#include "harness/memory/source.hpp"
#include "kernels/core/dtype.hpp"

namespace oomlab::ops::detail {

// The (N, H, W, C*r*r) side is `low`, the (N, H*r, W*r, C) side `high`. forward: high <- low;
// backward: low <- high.
struct PixelShuffleGeometry {
  std::int64_t n, h, w, c;  // low-resolution side's N, H, W and the high side's C
  int factor;
};

void pixel_shuffle_cuda(DType dtype, const PixelShuffleGeometry& g, bool forward, const void* src,
                        void* dst, memory::StreamHandle stream);

}  // namespace oomlab::ops::detail
