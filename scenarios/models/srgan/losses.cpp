#include "scenarios/models/srgan/losses.hpp"

#include "kernels/conv/l1_loss.hpp"
#include "kernels/conv/reduce.hpp"
#include "kernels/conv/softplus.hpp"
#include "kernels/core/check.hpp"
#include "kernels/transformer/loss_scale.hpp"

namespace oomlab::srgan {

LossTerm l1_term(const Tensor& prediction, const Tensor& target, float weight) {
  LossTerm term;
  term.value = Tensor::empty(prediction.device(), {1}, DType::f32);
  ops::l1_loss_forward(prediction, target, term.value);
  term.gradient = Tensor::empty(prediction.device(), prediction.shape(), prediction.dtype());
  ops::l1_loss_backward(prediction, target, weight, term.gradient);
  return term;
}

LossTerm softplus_term(const Tensor& logits, float sign, float weight) {
  OOMLAB_CHECK(sign == 1.0f || sign == -1.0f, "softplus_term: sign must be +1 or -1, got " << sign);
  Device& device = logits.device();
  Tensor signed_logits = Tensor::empty(device, logits.shape(), logits.dtype());
  signed_logits.copy_from(logits);
  ops::scale(signed_logits, sign);
  Tensor per_position = Tensor::empty(device, logits.shape(), logits.dtype());
  ops::softplus_forward(signed_logits, per_position);
  LossTerm term;
  term.value = Tensor::empty(device, {1}, DType::f32);
  ops::mean(per_position, term.value);
  per_position.reset();
  // d mean / d position = 1/numel; through softplus and the sign flip.
  Tensor upstream = Tensor::empty(device, logits.shape(), logits.dtype());
  upstream.fill(weight / static_cast<double>(logits.numel()));
  term.gradient = Tensor::empty(device, logits.shape(), logits.dtype());
  ops::softplus_backward(signed_logits, upstream, term.gradient);
  ops::scale(term.gradient, sign);
  return term;
}

float read_scalar(const Tensor& scalar) {
  OOMLAB_CHECK(scalar.numel() == 1, "read_scalar: " << scalar.describe() << " is not a scalar");
  if (scalar.device().is_dry()) return 0.0f;
  return scalar.to_host_f32().at(0);
}

}  // namespace oomlab::srgan
