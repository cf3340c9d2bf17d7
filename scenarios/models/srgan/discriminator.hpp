// The SR-GAN discriminator with an explicit forward and backward (layout in srgan_config.hpp).
//
// Its forward result is also what its backward needs: the input and the four LeakyReLU outputs
// (LeakyReLU back-propagates from its output, and each output is the next conv's input). So the
// feature maps a caller keeps (feature matching, epoch statistics) are exactly these tensors:
// holding a reference keeps the allocation alive, dropping the last one frees it.
#pragma once
#include <array>
#include <cstddef>
#include <vector>

#include "scenarios/models/srgan/conv_layer.hpp"
#include "scenarios/models/srgan/srgan_config.hpp"

namespace oomlab::srgan {

constexpr int kDiscriminatorLayers = 4;
using FeatureMaps = std::array<Tensor, kDiscriminatorLayers>;

struct DiscriminatorForward {
  Tensor input;          // (N, H, W, 3), the caller's batch (shared, not copied)
  FeatureMaps features;  // (N, H/2, W/2, C0), ..., (N, H/16, W/16, C3), after LeakyReLU
  Tensor logits;         // (N, H/16, W/16, 1)

  std::size_t feature_bytes() const;
};

class SrganDiscriminator {
 public:
  // Allocates weights [weights] and grads [grads]; initialised from config.seed (its own stream).
  SrganDiscriminator(Device& device, const SrganConfig& config);

  // Every tensor under Tag::activations. H and W must be multiples of 16.
  DiscriminatorForward forward(const Tensor& image);

  // Back-propagates d loss / d logits, plus d loss / d features[l] where d_features[l] is defined
  // (feature matching), through the network. Writes every parameter's grad (overwritten) when
  // `parameter_grads`, and returns d loss / d image when `input_grad` (else an undefined tensor).
  // Consumes `forward`: each feature map is released once used, unless the caller holds it too.
  Tensor backward(DiscriminatorForward forward, const Tensor& d_logits,
                  const FeatureMaps& d_features, bool parameter_grads, bool input_grad);

  std::vector<Parameter*> parameters();
  const SrganConfig& config() const { return config_; }

 private:
  SrganConfig config_;
  std::array<ConvLayer, kDiscriminatorLayers> downsample_;  // 4x4 stride 2 padding 1
  ConvLayer head_;                                          // 3x3 -> 1 logit
};

}  // namespace oomlab::srgan
