// The direct conv2d kernels for <= 4 channels on one side (direct_narrow.cuh), instantiated once
// per dtype behind the host entry points of direct_narrow.hpp.
#include "kernels/conv/direct_narrow.cuh"

namespace oomlab::ops::detail {

namespace {

bool narrow_applies(const Conv2dGeometry& g, bool transposed) {
  // The cap, or less on GPUs with less shared memory per block (99 KiB on 8.6/8.9/12.x, 64 KiB on
  // 7.5): larger shapes take the implicit GEMM there.
  return (g.c <= kNarrowMax || g.k <= kNarrowMax) &&
         narrow_shared_bytes(g, transposed) <= std::min(kNarrowMaxSharedBytes, max_shared_bytes_per_block());
}

}  // namespace

bool narrow_forward_applies(const Conv2dGeometry& g) { return narrow_applies(g, false); }
bool narrow_backward_data_applies(const Conv2dGeometry& g) { return narrow_applies(g, true); }

void narrow_forward_cuda(DType dtype, const Conv2dGeometry& g, const void* x, const void* w,
                         const void* bias, void* y, const EpilogueArgs& epilogue,
                         memory::StreamHandle stream) {
  OOMLAB_CHECK(narrow_forward_applies(g), "conv2d_forward: the direct kernel does not take this shape");
  dispatch_float(dtype, "conv2d_forward", [&](auto zero) {
    using T = decltype(zero);
    launch_narrow_forward(g, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
                          static_cast<T*>(y), epilogue, as_cuda_stream(stream));
  });
}

void narrow_backward_data_cuda(DType dtype, const Conv2dGeometry& g, const void* dy, const void* w,
                               void* dx, const EpilogueArgs& epilogue, memory::StreamHandle stream) {
  OOMLAB_CHECK(narrow_backward_data_applies(g), "conv2d_backward_data: the direct kernel does not take this shape");
  dispatch_float(dtype, "conv2d_backward_data", [&](auto zero) {
    using T = decltype(zero);
    launch_narrow_backward_data(g, static_cast<const T*>(dy), static_cast<const T*>(w), static_cast<T*>(dx),
                                epilogue, as_cuda_stream(stream));
  });
}

}  // namespace oomlab::ops::detail
