// The discriminator's backward (parameters, input, and feature-map gradients entering mid-way)
// against central finite differences on host (tiny config, f32).
#include <gtest/gtest.h>

#include "harness/memory/alloc_config.hpp"
#include "kernels/testing/compare.hpp"
#include "kernels/testing/finite_difference.hpp"
#include "kernels/testing/random_fill.hpp"
#include "scenarios/models/srgan/discriminator.hpp"
#include "scenarios/models/srgan/tests/gradient_check.hpp"

namespace oomlab::srgan {
namespace {

using oomlab::testing::gradient_matches_at_random_entries;
using oomlab::testing::probe_loss;
using oomlab::testing::random_tensor;
using oomlab::testing::random_values;

struct Probes {
  std::vector<float> logits;
  std::array<std::vector<float>, kDiscriminatorLayers> features;
};

// L = probe . logits + sum_l probe_l . features_l, so every path through the network counts.
double probed_loss(const DiscriminatorForward& forward, const Probes& probes) {
  double loss = probe_loss(forward.logits, probes.logits);
  for (int l = 0; l < kDiscriminatorLayers; ++l) loss += probe_loss(forward.features[l], probes.features[l]);
  return loss;
}

TEST(SrganDiscriminatorGradient, ParametersAndInputMatchFiniteDifferences) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  SrganConfig config = SrganConfig::tiny();
  config.seed = 21;
  SrganDiscriminator discriminator(device, config);
  Tensor image = random_tensor(device, {2, 16, 16, 3}, DType::f32, 22, 0.0f, 1.0f);

  DiscriminatorForward forward = discriminator.forward(image);
  Probes probes;
  probes.logits = random_values(forward.logits.numel(), 23);
  FeatureMaps d_features;
  for (int l = 0; l < kDiscriminatorLayers; ++l) {
    ASSERT_EQ(forward.features[l].shape(),
              (Shape{2, 16 >> (l + 1), 16 >> (l + 1), config.discriminator_channels[l]}));
    probes.features[l] = random_values(forward.features[l].numel(), 24 + l);
    d_features[l] = Tensor::from_host(device, forward.features[l].shape(), DType::f32, probes.features[l]);
  }
  const Tensor d_logits = Tensor::from_host(device, forward.logits.shape(), DType::f32, probes.logits);
  const std::vector<float> d_image =
      discriminator.backward(std::move(forward), d_logits, d_features, true, true).to_host_f32();

  auto loss = [&] { return probed_loss(discriminator.forward(image), probes); };
  std::uint32_t seed = 200;
  for (Parameter* p : discriminator.parameters()) {
    EXPECT_TRUE(gradient_matches_at_random_entries(p->value, p->grad.to_host_f32(), loss, p->name, ++seed));
  }
  EXPECT_TRUE(gradient_matches_at_random_entries(image, d_image, loss, "d_image", 300, 12));
}

TEST(SrganDiscriminatorGradient, WithoutParameterGradsOnlyTheInputGradIsComputed) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  SrganDiscriminator discriminator(device, SrganConfig::tiny());
  Tensor image = random_tensor(device, {1, 16, 16, 3}, DType::f32, 5, 0.0f, 1.0f);
  Parameter& head_bias = *discriminator.parameters().back();
  head_bias.grad.fill(42.0);
  DiscriminatorForward forward = discriminator.forward(image);
  const Tensor d_logits = random_tensor(device, forward.logits.shape(), DType::f32, 6);
  const Tensor d_image = discriminator.backward(std::move(forward), d_logits, {}, false, true);
  EXPECT_EQ(d_image.shape(), image.shape());
  EXPECT_EQ(head_bias.grad.to_host_f32(), std::vector<float>{42.0f});  // untouched

  forward = discriminator.forward(image);
  EXPECT_FALSE(discriminator.backward(std::move(forward), d_logits, {}, true, false).defined());
  EXPECT_NE(head_bias.grad.to_host_f32(), std::vector<float>{42.0f});
}

TEST(SrganDiscriminator, RejectsImagesItCannotDownsample) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  SrganDiscriminator discriminator(device, SrganConfig::tiny());
  EXPECT_THROW(discriminator.forward(Tensor::zeros(device, {1, 24, 16, 3}, DType::f32)), std::invalid_argument);
  EXPECT_THROW(discriminator.forward(Tensor::zeros(device, {1, 16, 16, 1}, DType::f32)), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::srgan
