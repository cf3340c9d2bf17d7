// The GPU consumer of the spawn story: one training step of a small conv denoiser per batch.
//   input  = the clean batch plus a fixed deterministic perturbation (made once, tag data)
//   model  = conv3x3(C -> hidden) + ReLU + conv3x3(hidden -> C), padding 1, NHWC / KRSC
//   loss   = L1(model(input), clean batch)
// then the full backward (both convs' weight and bias gradients, ReLU, conv data gradient) and a
// fused AdamW update. The parameters, their gradients and the AdamW moments each live in ONE
// flat f32 buffer (tags weights, grads, optimizer) with per-layer views, so the update is one
// adamw_step call. Every allocation is tagged and independent of the device kind, so host, dry
// and cuda see the same sequence; dry does no math.
#pragma once
#include <cstdint>

#include "kernels/core/tensor.hpp"

namespace oomlab::scenarios {

struct DenoiserConfig {
  int channels = 3;         // image channels (in and out)
  int hidden = 16;          // the hidden layer's channels
  float perturbation = 0.5f;  // the perturbation's amplitude (uniform in [-a, a])
  float learning_rate = 1e-2f;
  std::uint64_t seed = 7;
};

class ConvDenoiser {
 public:
  // Allocates the parameters (He-style random init), gradients, moments, and the perturbation
  // for batches of `batch_shape` (N, H, W, C).
  ConvDenoiser(Device& device, const Shape& batch_shape, const DenoiserConfig& config);

  // One training step on `clean` (f32 of the batch shape); the loss (mean |prediction - clean|)
  // is written to `loss` (one f32 element, e.g. a slice of a per-step history) without a host
  // sync. Throws std::invalid_argument when `clean` has another shape.
  void train_step(const Tensor& clean, const Tensor& loss);

  std::int64_t parameter_count() const { return params_.numel(); }
  int steps_taken() const { return step_; }

 private:
  Device& device_;
  Shape batch_shape_;
  DenoiserConfig config_;
  Tensor params_, grads_, adam_m_, adam_v_;  // flat f32
  Tensor w1_, b1_, w2_, b2_;                 // views of params_
  Tensor dw1_, db1_, dw2_, db2_;             // views of grads_
  Tensor perturbation_;                      // (N, H, W, C), fixed
  int step_ = 0;
};

}  // namespace oomlab::scenarios
