// Global gradient norm over many tensors, and clipping by it (torch.nn.utils.clip_grad_norm_).
// The norm stays on the device (one f32) and clipping reads it there, so no host sync and no
// data-dependent control flow: the same launches happen whatever the values.
//
// Deterministic: every tensor is cut into at most kGradNormBlocks fixed chunks, each reduced into
// its own slot of a scratch buffer (many tensors a launch), then one block sums the partials in a
// fixed order. The scratch is taken from the device allocator for the call (Tag::workspace,
// grads.size() * kGradNormBlocks f32 = 1 KiB per tensor, on every backend, so dry sees the same
// request) and returned after.
#pragma once
#include <vector>

#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

constexpr int kGradNormBlocks = 256;

// norm: (1) f32 = sqrt(sum over all grads of their squared elements).
void global_grad_norm(Tensor& norm, const std::vector<Tensor>& grads);
// Every grad *= min(1, max_norm / (norm + 1e-6)), with norm read on the device.
void clip_grads_by_norm(const std::vector<Tensor>& grads, const Tensor& norm, float max_norm);

namespace cuda {
// partials: (grads.size() * kGradNormBlocks) f32 scratch.
void global_grad_norm(Tensor& norm, const std::vector<Tensor>& grads, Tensor& partials,
                      memory::StreamHandle stream);
void clip_grads(const std::vector<Tensor>& grads, const Tensor& norm, float max_norm, memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
