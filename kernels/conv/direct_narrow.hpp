// Host entry points of the direct (non-GEMM) conv2d kernels for convolutions with <= 4 channels
// on one side (direct_narrow.cuh has the kernels and the scheme; direct_narrow.cu instantiates
// them once per dtype). conv2d.cu calls these before falling back to the implicit GEMM; the tests
// call them directly.
#pragma once

#include "kernels/conv/conv2d_launch.hpp"

namespace oomlab::ops::detail {

// Whether the direct kernels take this pass: one side has <= 4 channels and the block's tiles fit
// the shared-memory cap (shape-only).
bool narrow_forward_applies(const Conv2dGeometry& g);
bool narrow_backward_data_applies(const Conv2dGeometry& g);

#if OOMLAB_WITH_CUDA
// y = conv(x, w) + bias (bias may be null), then the epilogue. Requires narrow_forward_applies(g).
void narrow_forward_cuda(DType dtype, const Conv2dGeometry& g, const void* x, const void* w,
                         const void* bias, void* y, const EpilogueArgs& epilogue,
                         memory::StreamHandle stream);
// dx = conv_transpose(dy, w), then the epilogue; every element written. Requires
// narrow_backward_data_applies(g).
void narrow_backward_data_cuda(DType dtype, const Conv2dGeometry& g, const void* dy, const void* w,
                               void* dx, const EpilogueArgs& epilogue, memory::StreamHandle stream);
#endif

}  // namespace oomlab::ops::detail
