#include "scenarios/spawn/denoiser.hpp"

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "harness/memory/tags.hpp"
#include "kernels/conv/conv2d.hpp"
#include "kernels/conv/l1_loss.hpp"
#include "kernels/conv/leaky_relu.hpp"
#include "kernels/transformer/adamw.hpp"
#include "kernels/core/residual.hpp"

namespace oomlab::scenarios {
namespace {

constexpr ops::Conv2dParams kSame = {1, 1};  // 3x3, stride 1, padding 1: output size = input size

// Uniform values in [-scale, scale], appended to `out`.
void append_uniform(std::vector<float>& out, std::int64_t count, float scale, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (std::int64_t i = 0; i < count; ++i) out.push_back(dist(rng));
}

// A view of `count` elements of the flat buffer starting at `offset`, shaped `shape`.
Tensor part(const Tensor& flat, std::int64_t& offset, const Shape& shape) {
  const std::int64_t count = shape_numel(shape);
  Tensor view = flat.slice(offset, offset + count).view(shape);
  offset += count;
  return view;
}

}  // namespace

ConvDenoiser::ConvDenoiser(Device& device, const Shape& batch_shape, const DenoiserConfig& config)
    : device_(device), batch_shape_(batch_shape), config_(config) {
  if (batch_shape.size() != 4 || batch_shape[3] != config.channels) {
    throw std::invalid_argument("ConvDenoiser: batch shape must be (N, H, W, " +
                                std::to_string(config.channels) + ")");
  }
  const Shape w1_shape = {config.hidden, 3, 3, config.channels};
  const Shape b1_shape = {config.hidden};
  const Shape w2_shape = {config.channels, 3, 3, config.hidden};
  const Shape b2_shape = {config.channels};
  // He-style init for conv1 (ReLU follows); conv2 starts small, so the first prediction is near
  // zero and the loss starts near mean |clean|: learning shows as a falling loss.
  std::mt19937_64 rng(config.seed);
  std::vector<float> init;
  append_uniform(init, shape_numel(w1_shape), std::sqrt(6.0f / (9.0f * config.channels)), rng);
  append_uniform(init, shape_numel(b1_shape), 0.01f, rng);
  append_uniform(init, shape_numel(w2_shape), 0.1f * std::sqrt(3.0f / (9.0f * config.hidden)), rng);
  append_uniform(init, shape_numel(b2_shape), 0.01f, rng);
  const std::int64_t count = static_cast<std::int64_t>(init.size());
  {
    memory::TagScope tag(memory::Tag::weights);
    params_ = Tensor::from_host(device, {count}, DType::f32, init);
  }
  {
    memory::TagScope tag(memory::Tag::grads);
    grads_ = Tensor::zeros(device, {count}, DType::f32);
  }
  {
    memory::TagScope tag(memory::Tag::optimizer);
    adam_m_ = Tensor::zeros(device, {count}, DType::f32);
    adam_v_ = Tensor::zeros(device, {count}, DType::f32);
  }
  std::int64_t offset = 0;
  w1_ = part(params_, offset, w1_shape);
  b1_ = part(params_, offset, b1_shape);
  w2_ = part(params_, offset, w2_shape);
  b2_ = part(params_, offset, b2_shape);
  offset = 0;
  dw1_ = part(grads_, offset, w1_shape);
  db1_ = part(grads_, offset, b1_shape);
  dw2_ = part(grads_, offset, w2_shape);
  db2_ = part(grads_, offset, b2_shape);

  memory::TagScope tag(memory::Tag::data);
  if (device.is_dry()) {  // no values to hold: host memory must not grow with the batch planned
    perturbation_ = Tensor::empty(device, batch_shape, DType::f32);
    return;
  }
  std::vector<float> noise;
  append_uniform(noise, shape_numel(batch_shape), config.perturbation, rng);
  perturbation_ = Tensor::from_host(device, batch_shape, DType::f32, noise);
}

void ConvDenoiser::train_step(const Tensor& clean, const Tensor& loss) {
  if (clean.shape() != batch_shape_) {
    throw std::invalid_argument("ConvDenoiser::train_step: batch " + clean.describe() +
                                " is not the shape the denoiser was built for");
  }
  Tensor noisy;
  {
    memory::TagScope tag(memory::Tag::data);
    noisy = Tensor::empty(device_, batch_shape_, DType::f32);
  }
  ops::residual_add(noisy, clean, perturbation_);

  memory::TagScope tag(memory::Tag::activations);
  // Forward. ReLU in place: its backward needs only the output (slope 0).
  Tensor hidden = Tensor::empty(device_, ops::conv2d_output_shape(batch_shape_, w1_.shape(), kSame), DType::f32);
  ops::conv2d_forward(noisy, w1_, b1_, hidden, kSame);
  ops::relu_forward(hidden, hidden);
  Tensor prediction = Tensor::empty(device_, batch_shape_, DType::f32);
  ops::conv2d_forward(hidden, w2_, b2_, prediction, kSame);
  ops::l1_loss_forward(prediction, clean, loss);

  // Backward. The input's gradient is not needed (it is data), so conv1 has no backward_data.
  Tensor d_prediction = Tensor::empty(device_, batch_shape_, DType::f32);
  ops::l1_loss_backward(prediction, clean, 1.0f, d_prediction);
  prediction.reset();
  ops::conv2d_backward_weight(hidden, d_prediction, dw2_, db2_, kSame);
  Tensor d_hidden = Tensor::empty(device_, hidden.shape(), DType::f32);
  ops::conv2d_backward_data(d_prediction, w2_, d_hidden, kSame);
  d_prediction.reset();
  ops::relu_backward(hidden, d_hidden, d_hidden);
  hidden.reset();
  ops::conv2d_backward_weight(noisy, d_hidden, dw1_, db1_, kSame);
  d_hidden.reset();

  // Update: one fused AdamW over every parameter (the master weights are the parameters).
  ops::AdamWConfig adamw;
  adamw.lr = config_.learning_rate;
  Tensor no_copy;
  ops::adamw_step(params_, no_copy, grads_, adam_m_, adam_v_, adamw, ++step_);
}

}  // namespace oomlab::scenarios
