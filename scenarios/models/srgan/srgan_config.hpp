// The SR-GAN's dimensions in one struct, with the presets the scenarios use per scale.
//
// Generator (x4 super-resolution, all activations NHWC):
//   conv_in      3 -> C, 3x3                         (N, H, W, C)
//   residual x B conv 3x3 C->C, ReLU, conv 3x3 C->C, + skip
//   upsample x 2 conv 3x3 C -> 4C, pixel shuffle x2, ReLU   (N, 2H, 2W, C) then (N, 4H, 4W, C)
//   conv_out     C -> 3, 3x3                         (N, 4H, 4W, 3)
// Discriminator on (N, 4H, 4W, 3): four 4x4 stride-2 convs (padding 1) with LeakyReLU(0.2),
// each output a feature map, then a 3x3 conv head to one logit per position.
#pragma once
#include <array>
#include <cstdint>

#include "kernels/core/dtype.hpp"

namespace oomlab::srgan {

struct SrganConfig {
  int channels = 64;          // generator width C
  int residual_blocks = 8;    // B
  std::array<int, 4> discriminator_channels{64, 128, 256, 512};
  float leaky_slope = 0.2f;
  DType dtype = DType::f32;   // parameters and activations; f32 master weights when not f32
  std::uint32_t seed = 1234;  // weight initialisation

  static constexpr int kImageChannels = 3;
  static constexpr int kUpscale = 4;  // two pixel-shuffle x2 stages

  // The dimensions: C = 64, 8 blocks, discriminator 64/128/256/512.
  static SrganConfig full() { return SrganConfig{}; }
  // Seconds on the host reference kernels; every layer kind is still there.
  static SrganConfig tiny() {
    SrganConfig config;
    config.channels = 8;
    config.residual_blocks = 2;
    config.discriminator_channels = {8, 16, 16, 32};
    return config;
  }
};

}  // namespace oomlab::srgan
