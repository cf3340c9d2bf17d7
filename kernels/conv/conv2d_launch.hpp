// conv2d's geometry, its backward-weight split plan (host-only and shape-only, so every device
// sizes the same workspace) and the CUDA launchers (conv2d.cu).
#pragma once
#include <cstdint>

#include "harness/memory/source.hpp"
#include "kernels/core/dtype.hpp"

namespace oomlab::ops::detail {

// x (n, h, w, c), w (k, r, s, c), y (n, p, q, k). The host checks that every GEMM extent
// (n*p*q, n*h*w, r*s*c, ...) fits in int32 before a kernel sees it.
struct Conv2dGeometry {
  std::int64_t n, h, w, c, k, r, s, p, q;
  int stride, pad;
};

// Backward-weight splits the GEMM's long reduction dim (n*p*q rows of dy) into `splits` ranges of
// `rows_per_split` rows (a multiple of 32, the largest k-tile); each range writes its own f32
// partial dw, summed in a fixed order afterwards. Workspace: splits * k*r*s*c floats, then the
// bias partials (plan_channel_sum(n*p*q).count * k floats) when there is a bias. The CUDA path
// for <= 4 channels on one side (wgrad_small_channels.cuh) fills the first min(splits, its tile
// count) partials instead, so the workspace is the same whichever kernel runs.
struct WgradPlan {
  std::int64_t splits = 1;
  std::int64_t rows_per_split = 32;
  std::int64_t weight_partial_floats = 0;
  std::int64_t bias_partial_floats = 0;
};
WgradPlan plan_wgrad(const Conv2dGeometry& g, bool with_bias);

// conv2d.hpp's ConvEpilogue as the kernels take it (null: not there).
struct EpilogueArgs {
  const void* addend = nullptr;
  const void* activation_output = nullptr;  // backward-data
  bool activation = false;
  float slope = 0.0f;
};

#if OOMLAB_WITH_CUDA
// The data passes run on Hopper's wgmma (implicit_gemm_sm90.cuh) where detail::device_runs_wgmma()
// (kernels/core/wgmma_device.hpp) holds, else on mma.sync.
void conv2d_forward_cuda(DType dtype, const Conv2dGeometry& g, const void* x, const void* w,
                         const void* bias, void* y, const EpilogueArgs& epilogue,
                         memory::StreamHandle stream);
// w_transposed: w's size, scratch for a K-major copy of the weights where the kernel wants one.
void conv2d_backward_data_cuda(DType dtype, const Conv2dGeometry& g, const void* dy,
                               const void* w, void* w_transposed, void* dx,
                               const EpilogueArgs& epilogue, memory::StreamHandle stream);
// workspace: plan_wgrad(g, dbias != nullptr) floats.
void conv2d_backward_weight_cuda(DType dtype, const Conv2dGeometry& g, const void* x,
                                 const void* dy, void* dw, void* dbias, float* workspace,
                                 memory::StreamHandle stream);
#endif

}  // namespace oomlab::ops::detail
