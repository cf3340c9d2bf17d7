// The generator's backward against central finite differences on host (tiny config, f32), and
// its inference forward against its training forward.
#include <gtest/gtest.h>

#include "harness/memory/alloc_config.hpp"
#include "kernels/testing/finite_difference.hpp"
#include "kernels/testing/random_fill.hpp"
#include "scenarios/models/srgan/generator.hpp"
#include "scenarios/models/srgan/tests/gradient_check.hpp"

namespace oomlab::srgan {
namespace {

using oomlab::testing::gradient_matches_at_random_entries;
using oomlab::testing::probe_loss;
using oomlab::testing::random_tensor;
using oomlab::testing::random_values;

SrganConfig gradient_config() {
  SrganConfig config = SrganConfig::tiny();
  config.channels = 4;
  config.seed = 7;
  return config;
}

TEST(SrganGeneratorGradient, EveryParameterMatchesFiniteDifferences) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  SrganGenerator generator(device, gradient_config());
  const Tensor input = random_tensor(device, {2, 4, 4, 3}, DType::f32, 11, 0.0f, 1.0f);
  const std::vector<float> probe = random_values(2 * 16 * 16 * 3, 12);
  auto loss = [&] { return probe_loss(generator.forward_inference(input), probe); };

  GeneratorForward forward = generator.forward_train(input);
  generator.backward(std::move(forward.saved),
                     Tensor::from_host(device, forward.output.shape(), DType::f32, probe));
  std::uint32_t seed = 100;
  for (Parameter* p : generator.parameters()) {
    EXPECT_TRUE(gradient_matches_at_random_entries(p->value, p->grad.to_host_f32(), loss, p->name, ++seed));
  }
}

TEST(SrganGenerator, InferenceGivesTheTrainingOutputAndKeepsLess) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  SrganGenerator generator(device, SrganConfig::tiny());
  const Tensor input = random_tensor(device, {2, 8, 8, 3}, DType::f32, 3, 0.0f, 1.0f);

  device.allocator().push_scope();
  const std::vector<float> inferred = generator.forward_inference(input).to_host_f32();
  const auto inference_peak = device.allocator().pop_scope().peak_allocated;

  device.allocator().push_scope();
  GeneratorForward trained = generator.forward_train(input);
  const auto training_peak = device.allocator().pop_scope().peak_allocated;

  EXPECT_EQ(trained.output.shape(), (Shape{2, 32, 32, 3}));
  EXPECT_EQ(inferred, trained.output.to_host_f32());  // the same ops in the same order: bit-equal
  EXPECT_LT(inference_peak, training_peak);
  // 1 stem + 2 per block at 8x8xC, the two upsampled maps at 16x16xC and 32x32xC.
  const std::size_t map = 2 * 8 * 8 * 8 * sizeof(float);
  EXPECT_EQ(trained.saved.activation_bytes(), map * (1 + 2 * 2) + map * 4 + map * 16);
}

TEST(SrganGenerator, RejectsBadInput) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  SrganGenerator generator(device, SrganConfig::tiny());
  EXPECT_THROW(generator.forward_inference(Tensor::zeros(device, {1, 8, 8, 4}, DType::f32)),
               std::invalid_argument);
  EXPECT_THROW(generator.forward_inference(Tensor::zeros(device, {1, 8, 8, 3}, DType::bf16)),
               std::invalid_argument);
  EXPECT_THROW(generator.forward_inference(Tensor()), std::invalid_argument);
  GeneratorForward forward = generator.forward_train(Tensor::zeros(device, {1, 8, 8, 3}, DType::f32));
  EXPECT_THROW(generator.backward(std::move(forward.saved), Tensor::zeros(device, {1, 8, 8, 3}, DType::f32)),
               std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::srgan
