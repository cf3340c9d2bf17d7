#include "scenarios/models/srgan/discriminator.hpp"

#include <random>
#include <string>

#include "harness/memory/tags.hpp"
#include "kernels/core/check.hpp"

namespace oomlab::srgan {
namespace {

// The discriminator draws its initial weights from a stream apart from the generator's.
constexpr std::uint32_t kSeedOffset = 0x5eed;

}  // namespace

std::size_t DiscriminatorForward::feature_bytes() const {
  std::size_t bytes = 0;
  for (const Tensor& f : features) bytes += f.defined() ? f.nbytes() : 0;
  return bytes;
}

SrganDiscriminator::SrganDiscriminator(Device& device, const SrganConfig& config) : config_(config) {
  std::mt19937 rng(config.seed + kSeedOffset);
  int in = SrganConfig::kImageChannels;
  for (int l = 0; l < kDiscriminatorLayers; ++l) {
    const int out = config.discriminator_channels[l];
    OOMLAB_CHECK(out >= 1, "SrganDiscriminator: layer " << l << " needs >= 1 channel, got " << out);
    downsample_[l] = make_conv_layer(device, "discriminator.conv" + std::to_string(l), in, out, 4,
                                     2, 1, config.dtype, 1.0f, rng);
    in = out;
  }
  head_ = make_conv_layer(device, "discriminator.head", in, 1, 3, 1, 1, config.dtype, 1.0f, rng);
}

DiscriminatorForward SrganDiscriminator::forward(const Tensor& image) {
  OOMLAB_CHECK(image.defined() && image.ndim() == 4 && image.dim(3) == SrganConfig::kImageChannels &&
                   image.dim(1) % 16 == 0 && image.dim(2) % 16 == 0,
               "SrganDiscriminator: image must be (N, H, W, 3) with H and W multiples of 16, got "
                   << (image.defined() ? image.describe() : std::string("an undefined tensor")));
  OOMLAB_CHECK(image.dtype() == config_.dtype, "SrganDiscriminator: image " << image.describe()
                                                   << " must have the model dtype " << dtype_name(config_.dtype));
  memory::TagScope tag(memory::Tag::activations);
  DiscriminatorForward result;
  result.input = image;
  const Tensor* x = &image;
  for (int l = 0; l < kDiscriminatorLayers; ++l) {
    result.features[l] = downsample_[l].forward(*x, then_activation(config_.leaky_slope));  // LeakyReLU fused
    x = &result.features[l];
  }
  result.logits = head_.forward(*x);
  return result;
}

Tensor SrganDiscriminator::backward(DiscriminatorForward forward, const Tensor& d_logits,
                                    const FeatureMaps& d_features, bool parameter_grads,
                                    bool input_grad) {
  OOMLAB_CHECK(forward.logits.defined() && d_logits.shape() == forward.logits.shape(),
               "SrganDiscriminator::backward: d_logits " << d_logits.describe()
                   << " does not match the forward's logits");
  memory::TagScope tag(memory::Tag::activations);
  FeatureMaps& features = forward.features;
  // The gradient at feature l: what comes from above plus the feature's own loss gradient, back
  // through the LeakyReLU; both fused into the backward-data that makes it.
  auto into_feature = [&](int l) {
    return through_activation(features[l], config_.leaky_slope, d_features[l]);
  };
  const int last = kDiscriminatorLayers - 1;
  if (parameter_grads) head_.backward_weight(features[last], d_logits);
  Tensor d = head_.backward_data(d_logits, features[last].shape(), into_feature(last));
  for (int l = last; l >= 0; --l) {
    features[l].reset();
    const Tensor& layer_input = l == 0 ? forward.input : features[l - 1];
    if (parameter_grads) downsample_[l].backward_weight(layer_input, d);
    if (l == 0 && !input_grad) return Tensor();
    d = downsample_[l].backward_data(d, layer_input.shape(), l > 0 ? into_feature(l - 1) : ops::ConvEpilogue{});
  }
  return d;
}

std::vector<Parameter*> SrganDiscriminator::parameters() {
  std::vector<Parameter*> list;
  for (ConvLayer& layer : downsample_) {
    list.push_back(&layer.weight);
    list.push_back(&layer.bias);
  }
  list.push_back(&head_.weight);
  list.push_back(&head_.bias);
  return list;
}

}  // namespace oomlab::srgan
