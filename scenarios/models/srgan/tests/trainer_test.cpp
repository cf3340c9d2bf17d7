// The SR-GAN training step on host and dry (tiny config): deterministic losses, a loss gradient
// checked end to end, the same allocation sequence on both devices, every tag used, memory flat
// between steps, and the real-feature hook (what srgan_leak keeps).
#include <cmath>

#include <gtest/gtest.h>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/tags.hpp"
#include "harness/memory/trace.hpp"
#include "kernels/testing/random_fill.hpp"
#include "scenarios/models/srgan/losses.hpp"
#include "scenarios/models/srgan/trainer.hpp"
#include "scenarios/models/srgan/tests/gradient_check.hpp"

namespace oomlab::srgan {
namespace {

using memory::Tag;

constexpr int kBatch = 2;
constexpr int kLowRes = 8;  // 8x8 -> 32x32

std::vector<SrganLosses> train(DeviceKind kind, int steps, std::vector<memory::TraceEvent>* events = nullptr) {
  Device device(kind, memory::AllocatorConfig{});
  SrganTrainer trainer(device, SrganConfig::tiny());
  SyntheticPairs data(5, kLowRes);
  std::vector<SrganLosses> losses;
  for (int step = 0; step < steps; ++step) {
    device.allocator().mark_step(step);
    losses.push_back(trainer.train_step(data.batch(device, kBatch, step, DType::f32)));
  }
  if (events) events->assign(device.allocator().trace().events().begin(), device.allocator().trace().events().end());
  return losses;
}

TEST(SrganTrainer, LossesAreFinitePositiveAndDeterministic) {
  const auto first = train(DeviceKind::host, 3);
  const auto second = train(DeviceKind::host, 3);
  for (std::size_t i = 0; i < first.size(); ++i) {
    for (float v : {first[i].discriminator, first[i].pixel, first[i].feature_matching, first[i].adversarial}) {
      EXPECT_TRUE(std::isfinite(v) && v > 0.0f) << "step " << i << ": " << v;
    }
    EXPECT_FLOAT_EQ(first[i].generator, first[i].pixel + first[i].feature_matching + 1e-3f * first[i].adversarial);
    EXPECT_EQ(first[i].discriminator, second[i].discriminator) << i;
    EXPECT_EQ(first[i].generator, second[i].generator) << i;
  }
  // Two log 2 at the start: the discriminator cannot tell real from fake yet.
  EXPECT_NEAR(first[0].discriminator, 2 * std::log(2.0f), 0.5f);
}

TEST(SrganTrainer, HostAndDryMakeTheSameAllocationSequence) {
  std::vector<memory::TraceEvent> host, dry;
  train(DeviceKind::host, 2, &host);
  const auto dry_losses = train(DeviceKind::dry, 2, &dry);
  EXPECT_EQ(dry_losses[0].generator, 0.0f);  // dry has no values
  ASSERT_EQ(host.size(), dry.size());
  ASSERT_GT(host.size(), 100u);
  for (std::size_t i = 0; i < host.size(); ++i) {
    ASSERT_TRUE(host[i].same_as(dry[i])) << "event " << i << " differs: " << event_kind_name(host[i].kind)
                                         << " vs " << event_kind_name(dry[i].kind);
  }
}

TEST(SrganTrainer, EveryTagIsUsedAndMemoryIsFlatBetweenSteps) {
  Device device(DeviceKind::dry, memory::AllocatorConfig{});
  SrganTrainer trainer(device, SrganConfig::tiny());
  SyntheticPairs data(5, kLowRes);
  std::vector<std::int64_t> allocated_between_steps;
  for (int step = 0; step < 3; ++step) {
    ImageBatch batch = data.batch(device, kBatch, step, DType::f32);
    trainer.train_step(batch);
    batch = {};
    allocated_between_steps.push_back(device.allocator().stats().allocated.current);
  }
  EXPECT_EQ(allocated_between_steps[0], allocated_between_steps[1]);
  EXPECT_EQ(allocated_between_steps[1], allocated_between_steps[2]);
  const memory::MemoryStats stats = device.allocator().stats();
  for (Tag tag : {Tag::weights, Tag::grads, Tag::optimizer, Tag::activations, Tag::data, Tag::workspace}) {
    EXPECT_GT(stats.tag(tag).peak, 0) << memory::tag_name(tag);
  }
  EXPECT_EQ(stats.tag(Tag::other).peak, 0) << "an allocation escaped every tag scope";
  EXPECT_EQ(stats.tag(Tag::activations).current, 0);
  EXPECT_EQ(stats.tag(Tag::data).current, 0);
  // Adam's two moments are f32 copies of every parameter.
  EXPECT_EQ(stats.tag(Tag::optimizer).current, 2 * stats.tag(Tag::weights).current);
}

TEST(SrganTrainer, KeepingTheRealFeaturesGrowsMemoryByTheirBytesEachStep) {
  Device device(DeviceKind::dry, memory::AllocatorConfig{});
  SrganTrainer trainer(device, SrganConfig::tiny());
  SyntheticPairs data(5, kLowRes);
  std::vector<FeatureMaps> kept;
  std::size_t feature_bytes = 0;
  TrainHooks hooks;
  hooks.on_real_features = [&](const FeatureMaps& features) {
    feature_bytes = 0;
    for (const Tensor& f : features) feature_bytes += f.nbytes();
    kept.push_back(features);
  };
  std::vector<std::int64_t> allocated;
  for (int step = 0; step < 3; ++step) {
    trainer.train_step(data.batch(device, kBatch, step, DType::f32), hooks);
    allocated.push_back(device.allocator().stats().allocated.current);
  }
  // 32x32 real images: 16x16x8, 8x8x16, 4x4x16, 2x2x32 per image.
  EXPECT_EQ(feature_bytes, kBatch * (16 * 16 * 8 + 8 * 8 * 16 + 4 * 4 * 16 + 2 * 2 * 32) * sizeof(float));
  EXPECT_EQ(allocated[1] - allocated[0], static_cast<std::int64_t>(feature_bytes));
  EXPECT_EQ(allocated[2] - allocated[1], static_cast<std::int64_t>(feature_bytes));
}

TEST(SrganTrainer, PixelPretrainingLowersTheLoss) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  SrganGenerator generator(device, SrganConfig::tiny());
  Adam adam(device, generator.parameters(), ops::AdamWConfig{1e-2f});
  const ImageBatch batch = SyntheticPairs(9, kLowRes).batch(device, kBatch, 0, DType::f32);
  const float first = train_generator_pixel_step(generator, adam, batch);
  float last = first;
  for (int step = 0; step < 10; ++step) last = train_generator_pixel_step(generator, adam, batch);
  EXPECT_LT(last, 0.7f * first);
}

TEST(SrganTrainer, RunsInBf16) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  SrganConfig config = SrganConfig::tiny();
  config.dtype = DType::bf16;
  SrganTrainer trainer(device, config);
  const SrganLosses losses = trainer.train_step(SyntheticPairs(5, kLowRes).batch(device, kBatch, 0, DType::bf16));
  EXPECT_TRUE(std::isfinite(losses.generator) && losses.generator > 0.0f);
  EXPECT_NEAR(losses.discriminator, 2 * std::log(2.0f), 0.5f);
}

TEST(SrganLosses, SoftplusTermGradientMatchesFiniteDifferences) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  Tensor logits = oomlab::testing::random_tensor(device, {2, 3, 3, 1}, DType::f32, 8, -3.0f, 3.0f);
  for (float sign : {-1.0f, 1.0f}) {
    const LossTerm term = softplus_term(logits, sign, 0.5f);
    auto loss = [&] { return 0.5 * read_scalar(softplus_term(logits, sign, 0.5f).value); };
    EXPECT_TRUE(oomlab::testing::gradient_matches_at_random_entries(logits, term.gradient.to_host_f32(), loss,
                                                                    "softplus", 9, 8, 1e-2f, {1e-4, 1e-2}));
  }
}

}  // namespace
}  // namespace oomlab::srgan
