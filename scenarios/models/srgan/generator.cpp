#include "scenarios/models/srgan/generator.hpp"

#include <random>
#include <string>

#include "harness/memory/tags.hpp"
#include "kernels/conv/pixel_shuffle.hpp"
#include "kernels/core/check.hpp"

namespace oomlab::srgan {
namespace {

constexpr int kShuffle = 2;  // each upsampling stage doubles H and W

// The residual branch's last conv starts small so eight blocks do not blow the signal up.
constexpr float kResidualBranchGain = 0.1f;

}  // namespace

std::size_t GeneratorSaved::activation_bytes() const {
  std::size_t bytes = stem.defined() ? stem.nbytes() : 0;
  for (const auto* list : {&block_hidden, &block_output}) {
    for (const Tensor& t : *list) bytes += t.defined() ? t.nbytes() : 0;
  }
  for (const Tensor& t : upsampled) bytes += t.defined() ? t.nbytes() : 0;
  return bytes;
}

SrganGenerator::SrganGenerator(Device& device, const SrganConfig& config) : config_(config) {
  OOMLAB_CHECK(config.channels >= 1 && config.residual_blocks >= 0,
               "SrganGenerator: channels must be >= 1 and residual_blocks >= 0, got "
                   << config.channels << " and " << config.residual_blocks);
  std::mt19937 rng(config.seed);
  const int c = config.channels;
  const DType dtype = config.dtype;
  stem_ = make_conv_layer(device, "generator.stem", SrganConfig::kImageChannels, c, 3, 1, 1, dtype, 1.0f, rng);
  for (int b = 0; b < config.residual_blocks; ++b) {
    const std::string name = "generator.block" + std::to_string(b);
    blocks_.push_back({make_conv_layer(device, name + ".conv1", c, c, 3, 1, 1, dtype, 1.0f, rng),
                       make_conv_layer(device, name + ".conv2", c, c, 3, 1, 1, dtype,
                                       kResidualBranchGain, rng)});
  }
  for (int s = 0; s < 2; ++s) {
    upsample_[s] = make_conv_layer(device, "generator.upsample" + std::to_string(s), c,
                                   c * kShuffle * kShuffle, 3, 1, 1, dtype, 1.0f, rng);
  }
  head_ = make_conv_layer(device, "generator.head", c, SrganConfig::kImageChannels, 3, 1, 1, dtype, 1.0f, rng);
}

void SrganGenerator::check_input(const Tensor& input) const {
  OOMLAB_CHECK(input.defined() && input.ndim() == 4 && input.dim(3) == SrganConfig::kImageChannels,
               "SrganGenerator: input must be (N, H, W, 3), got "
                   << (input.defined() ? input.describe() : std::string("an undefined tensor")));
  OOMLAB_CHECK(input.dtype() == config_.dtype, "SrganGenerator: input " << input.describe()
                                                   << " must have the model dtype " << dtype_name(config_.dtype));
}

Shape SrganGenerator::output_shape(const Shape& input) const {
  OOMLAB_CHECK(input.size() == 4 && input[3] == SrganConfig::kImageChannels,
               "SrganGenerator: input must be (N, H, W, 3), got " << shape_string(input));
  return {input[0], input[1] * SrganConfig::kUpscale, input[2] * SrganConfig::kUpscale,
          SrganConfig::kImageChannels};
}

GeneratorForward SrganGenerator::forward_train(const Tensor& input) {
  GeneratorForward result;
  result.output = forward(input, &result.saved);
  return result;
}

Tensor SrganGenerator::forward_inference(const Tensor& input) { return forward(input, nullptr); }

// One forward for both modes, so inference computes exactly what training computes. With
// `saved` null each activation's last reference is dropped as soon as its consumer has run.
Tensor SrganGenerator::forward(const Tensor& input, GeneratorSaved* saved) {
  check_input(input);
  memory::TagScope tag(memory::Tag::activations);
  Tensor h = stem_.forward(input);
  if (saved) {
    saved->input = input;
    saved->stem = h;
  }
  // The ReLUs and the skip add run in the convs' epilogues (the same values as separate ops).
  for (auto& [conv1, conv2] : blocks_) {
    Tensor hidden = conv1.forward(h, then_activation(0.0f));
    Tensor out = conv2.forward(hidden, plus(h));
    if (saved) saved->block_hidden.push_back(hidden);
    hidden.reset();
    if (saved) saved->block_output.push_back(out);
    h = std::move(out);  // without `saved`, the block's input goes here
  }
  for (int s = 0; s < 2; ++s) {
    // ReLU before the shuffle: an element-wise op commutes with the permutation.
    Tensor wide = upsample_[s].forward(h, then_activation(0.0f));
    h.reset();
    Tensor shuffled = Tensor::empty(input.device(), ops::pixel_shuffle_output_shape(wide.shape(), kShuffle),
                                    wide.dtype());
    ops::pixel_shuffle_forward(wide, shuffled, kShuffle);
    wide.reset();
    if (saved) saved->upsampled[s] = shuffled;
    h = std::move(shuffled);
  }
  return head_.forward(h);
}

void SrganGenerator::backward(GeneratorSaved saved, const Tensor& d_output) {
  OOMLAB_CHECK(saved.upsampled[1].defined() &&
                   static_cast<int>(saved.block_output.size()) == config_.residual_blocks,
               "SrganGenerator::backward: `saved` is not a complete forward_train result");
  OOMLAB_CHECK(d_output.shape() == output_shape(saved.input.shape()),
               "SrganGenerator::backward: d_output " << d_output.describe() << " should have shape "
                                                     << shape_string(output_shape(saved.input.shape())));
  memory::TagScope tag(memory::Tag::activations);
  head_.backward_weight(saved.upsampled[1], d_output);
  // Each backward-data also goes back through the ReLU that made its dx's forward tensor.
  Tensor d = head_.backward_data(d_output, saved.upsampled[1].shape(), through_activation(saved.upsampled[1], 0.0f));
  for (int s = 1; s >= 0; --s) {
    saved.upsampled[s].reset();
    Tensor& stage_input = s == 1 ? saved.upsampled[0]
                          : saved.block_output.empty() ? saved.stem : saved.block_output.back();
    Shape wide_shape = stage_input.shape();
    wide_shape[3] *= kShuffle * kShuffle;
    Tensor d_wide = Tensor::empty(d.device(), wide_shape, d.dtype());
    ops::pixel_shuffle_backward(d, d_wide, kShuffle);
    d.reset();
    upsample_[s].backward_weight(stage_input, d_wide);
    d = upsample_[s].backward_data(d_wide, stage_input.shape(),
                                   s == 1 ? through_activation(stage_input, 0.0f) : ops::ConvEpilogue{});
  }
  for (int b = config_.residual_blocks - 1; b >= 0; --b) {
    // d is the gradient at block b's output; the block's input gets it through the skip too.
    saved.block_output[b].reset();
    const Tensor& block_input = b == 0 ? saved.stem : saved.block_output[b - 1];
    auto& [conv1, conv2] = blocks_[b];
    Tensor& hidden = saved.block_hidden[b];
    conv2.backward_weight(hidden, d);
    Tensor d_hidden = conv2.backward_data(d, hidden.shape(), through_activation(hidden, 0.0f));
    hidden.reset();
    conv1.backward_weight(block_input, d_hidden);
    d = conv1.backward_data(d_hidden, block_input.shape(), plus(d));  // the branch's gradient + the skip's
  }
  stem_.backward_weight(saved.input, d);
}

std::vector<Parameter*> SrganGenerator::parameters() {
  std::vector<Parameter*> list;
  auto add = [&](ConvLayer& layer) {
    list.push_back(&layer.weight);
    list.push_back(&layer.bias);
  };
  add(stem_);
  for (auto& [conv1, conv2] : blocks_) {
    add(conv1);
    add(conv2);
  }
  for (ConvLayer& layer : upsample_) add(layer);
  add(head_);
  return list;
}

}  // namespace oomlab::srgan
