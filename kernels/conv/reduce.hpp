// Reductions to f32: the sum or mean of a whole tensor (one scalar), and the per-channel mean of
// an NHWC activation (the leak scenario's epoch statistics).
//
// Deterministic on every device: the CUDA kernels sum fixed partitions (their count depends only
// on the shape) in a fixed order, so the same input gives the same bits on every run.
// Each call allocates one small f32 workspace (tag workspace, reduction_workspace_floats()
// elements) on every device (the one invariant, docs/architecture.md).
#pragma once
#include <cstdint>

#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// out (one f32 element) = sum of every element of x (f32 or bf16).
void sum(const Tensor& x, const Tensor& out);
// out (one f32 element) = sum / numel; 0 elements give NaN, as in PyTorch.
void mean(const Tensor& x, const Tensor& out);
// x (..., C) channels-last, out f32 (C): the mean over all other dims, per channel.
void channel_mean(const Tensor& x, const Tensor& out);

}  // namespace oomlab::ops
