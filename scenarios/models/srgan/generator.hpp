// The SR-GAN generator with an explicit forward and backward (layout in srgan_config.hpp).
//
// What the training forward keeps for the backward (GeneratorSaved), per image at input H x W:
//   stem output, and per residual block its ReLU output and its output      (1 + 2B) maps H x W x C
//   each upsampling stage's output after pixel shuffle + ReLU               2H x 2W x C, 4H x 4W x C
// The conv before each pixel shuffle is freed at once (pixel shuffle's backward needs no input),
// and ReLUs run in place and back-propagate from their output, so nothing else is kept.
// forward_inference runs the same ops in the same order but drops every activation as soon as
// the next layer has consumed it: its peak is the largest layer's input + output, not the sum.
#pragma once
#include <array>
#include <cstddef>
#include <vector>

#include "scenarios/models/srgan/conv_layer.hpp"
#include "scenarios/models/srgan/srgan_config.hpp"

namespace oomlab::srgan {

struct GeneratorSaved {
  Tensor input;                        // (N, H, W, 3), the caller's batch (shared, not copied)
  Tensor stem;                         // (N, H, W, C)
  std::vector<Tensor> block_hidden;    // B x (N, H, W, C), ReLU output inside each block
  std::vector<Tensor> block_output;    // B x (N, H, W, C), block output (input + conv2)
  std::array<Tensor, 2> upsampled;     // (N, 2H, 2W, C), (N, 4H, 4W, C), after ReLU

  // Bytes of the activations held here (the input excluded: the caller owns it).
  std::size_t activation_bytes() const;
};

struct GeneratorForward {
  Tensor output;  // (N, 4H, 4W, 3)
  GeneratorSaved saved;
};

class SrganGenerator {
 public:
  // Allocates weights [weights] and grads [grads]; initialised from config.seed.
  SrganGenerator(Device& device, const SrganConfig& config);

  // (N, H, W, 3) -> (N, 4H, 4W, 3); throws std::invalid_argument on another shape or dtype.
  Shape output_shape(const Shape& input) const;

  // Every activation under Tag::activations; the saved ones stay alive in the result.
  GeneratorForward forward_train(const Tensor& input);
  // Overwrites every parameter's grad with d loss / d parameter, given d loss / d output.
  // Consumes `saved`: each activation is released as soon as the backward has used it.
  void backward(GeneratorSaved saved, const Tensor& d_output);
  // The same output as forward_train, keeping nothing (the `no_grad` of oomlab).
  Tensor forward_inference(const Tensor& input);

  std::vector<Parameter*> parameters();
  const SrganConfig& config() const { return config_; }

 private:
  Tensor forward(const Tensor& input, GeneratorSaved* saved);
  void check_input(const Tensor& input) const;

  SrganConfig config_;
  ConvLayer stem_;
  std::vector<std::array<ConvLayer, 2>> blocks_;  // conv1, conv2 of each residual block
  std::array<ConvLayer, 2> upsample_;             // C -> 4C before each pixel shuffle
  ConvLayer head_;                                // C -> 3
};

}  // namespace oomlab::srgan
