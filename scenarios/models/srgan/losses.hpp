// The SR-GAN's loss terms, each as its value (one f32 on the device) and its gradient with
// respect to the prediction, already multiplied by the term's weight:
//   pixel            L1(fake, real)
//   feature matching sum over layers of L1(D_l(fake), D_l(real))      (each its own L1 call)
//   adversarial      mean softplus(sign * logits): sign -1 for "should look real", +1 for fake
// Allocations under the caller's tag (the trainer's: activations).
#pragma once
#include "kernels/core/tensor.hpp"

namespace oomlab::srgan {

struct LossTerm {
  Tensor value;     // (1) f32, unweighted
  Tensor gradient;  // d (weight * value) / d prediction, prediction's shape and dtype
};

LossTerm l1_term(const Tensor& prediction, const Tensor& target, float weight);
LossTerm softplus_term(const Tensor& logits, float sign, float weight);

// A scalar tensor's value on the host (a blocking read on cuda); 0 on dry, which has no values.
float read_scalar(const Tensor& scalar);

}  // namespace oomlab::srgan
