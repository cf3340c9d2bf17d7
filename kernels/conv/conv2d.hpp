// conv2d forward, backward-data and backward-weight (+ bias and its gradient), f32 and bf16.
//
// Layout: channels-last everywhere in kernels/conv (and so in the SR-GAN):
//   activations x, y, dx, dy  NHWC  (N, H, W, C)
//   weights w, dw             KRSC  (K out channels, R rows, S cols, C in channels)
//   bias, dbias               (K)
// Why NHWC: the implicit GEMM's reduction dim is (r, s, c) with c innermost, so each operand
// tile row is a run of contiguous channels; with C % 8 == 0 a thread gathers 8 bf16 channels in
// one 16-byte cp.async, which is what feeds the tensor cores. cuDNN's fastest bf16 kernels use
// the same layout (the benchmark compares with cuDNN in NHWC/KRSC).
//
// Output size: P = (H + 2*padding - R) / stride + 1, Q likewise; any R, S >= 1 (3x3 and 4x4
// are the ones the scenarios use), stride >= 1, padding >= 0.
//
// CUDA implementation: implicit GEMM (no im2col buffer; operand tiles are gathered from the
// activations into shared memory on the fly, a 3-4 stage cp.async pipeline, f32 accumulation):
// on tensor cores by ldmatrix + mma.sync, or on Hopper by wgmma (16-bit stride-1 convs by shifted
// windows instead: staged input rows read at an offset per tap). f32 runs on TF32
// tensor cores (operands cut to a 10-bit mantissa: the low 13 bits ignored, as Hopper's tensor
// cores do for cuDNN's and PyTorch's default f32 convolutions), so f32 results on cuda differ
// from the host's exact f32 by ~1e-3 relative. With <= 4 channels on one side (the RGB convs)
// every pass runs as f32 FMAs instead (direct_narrow.cuh, wgrad_small_channels.cuh): exact f32
// products. Results are deterministic (no atomics): the same bits on every run on one GPU model
// (Hopper's 16-bit backward-weight shares its reduction among as many blocks as the SM count asks).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

struct Conv2dParams {
  int stride = 1;
  int padding = 0;
};

// Element-wise work fused into a data pass's output stores (conv2d_forward,
// conv2d_backward_data), so that a layer's activation or residual add does not read and write a
// whole activation tensor again as a separate op. The result is exactly what the separate ops
// give after the plain conv, rounding included (the GPU tests compare bit for bit):
//   out = conv(...)                                          (with bias, forward)
//   out = residual_add(out, addend)                          when addend is defined
//   forward:       out = leaky_relu_forward(out, slope)      when activation (ReLU: slope 0)
//   backward-data: out = leaky_relu_backward(activation_output, out, slope)   when activation
// addend and activation_output have the output's shape, dtype and device. For backward-data,
// activation_output is what the activation produced in the forward of the layer whose input
// gradient this is (its sign is its input's for slope >= 0, see leaky_relu.hpp).
struct ConvEpilogue {
  Tensor addend;             // undefined: nothing added
  bool activation = false;
  float slope = 0.0f;        // 0: ReLU
  Tensor activation_output;  // backward-data with activation only
};

// (N, P, Q, K) for x (N, H, W, C) and w (K, R, S, C); throws std::invalid_argument on a mismatch.
Shape conv2d_output_shape(const Shape& x, const Shape& w, Conv2dParams params);

// y = conv(x, w) + bias, then the epilogue. bias may be undefined (no bias).
void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                    Conv2dParams params, const ConvEpilogue& epilogue = {});
// dx = the gradient of the forward with respect to x (overwritten, not accumulated), then the
// epilogue. Allocates a copy of w's size (tag workspace) on every device, for the kernels' K-major
// weights (conv2d.cu) (the one invariant, docs/architecture.md).
void conv2d_backward_data(const Tensor& dy, const Tensor& w, const Tensor& dx, Conv2dParams params,
                          const ConvEpilogue& epilogue = {});
// dw (and dbias when defined) = the gradients with respect to w and bias (overwritten).
// Allocates one f32 workspace (tag workspace) of conv2d_backward_weight_workspace_bytes() on
// every device (the one invariant, docs/architecture.md); its size depends only on the shapes.
void conv2d_backward_weight(const Tensor& x, const Tensor& dy, const Tensor& dw,
                            const Tensor& dbias, Conv2dParams params);
std::size_t conv2d_backward_weight_workspace_bytes(const Shape& x, const Shape& w,
                                                   Conv2dParams params, bool with_bias);

}  // namespace oomlab::ops
