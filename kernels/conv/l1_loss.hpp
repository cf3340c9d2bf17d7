// L1 loss, mean |a - b| over every element (any shape; f32 or bf16 inputs, f32 loss), forward
// and backward. Used for the SR-GAN's pixel loss and feature matching.
// The forward is deterministic (see reduce.hpp) and allocates the same small workspace.
#pragma once
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// loss (one f32 element) = mean |a - b|.
void l1_loss_forward(const Tensor& a, const Tensor& b, const Tensor& loss);
// da = grad_loss * sign(a - b) / numel (sign(0) = 0); db, when defined, = -da. da and db must
// not share storage with a or b (db is computed from them after da is written). grad_loss is the
// loss's upstream gradient (its weight in the total loss), a host number so no sync is needed.
void l1_loss_backward(const Tensor& a, const Tensor& b, float grad_loss, const Tensor& da,
                      const Tensor& db = Tensor());

}  // namespace oomlab::ops
