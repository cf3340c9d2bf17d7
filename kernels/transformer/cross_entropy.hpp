// Softmax cross-entropy fused with its backward: one pass over the logits gives the loss per
// row and, in the same kernel, dlogits = (softmax(logits) - onehot(target)) * dloss.
// Every row counts (no ignore index). Columns at or past `classes` are vocabulary padding (a
// vocabulary rounded up to a multiple of 64 keeps the LM head's GEMM on tensor-core-friendly
// shapes, as llm.c and nanoGPT do): they take no part in the softmax and get dlogits 0.
#pragma once
#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// logits: (..., V) float dtype (N = numel / V rows); targets: (N) i32; losses: (N) f32.
// dlogits: logits' shape and dtype, or undefined for the loss alone; it may be the logits
// tensor itself (in place, as llm.c does, to save the (N, V) buffer). dloss is dL/dloss_row
// (1/N for a mean). classes: the real vocabulary, 0 < classes <= V (0: V, no padding). A target
// outside [0, classes) throws on host and gives a NaN loss on cuda.
void softmax_cross_entropy(Tensor& losses, Tensor& dlogits, const Tensor& logits,
                           const Tensor& targets, float dloss, std::int64_t classes = 0);

namespace cuda {
void softmax_cross_entropy(Tensor& losses, Tensor& dlogits, const Tensor& logits,
                           const Tensor& targets, float dloss, std::int64_t classes,
                           memory::StreamHandle stream);
}

}  // namespace oomlab::ops
