// The SR-GAN step without host waits, on a GPU: device-to-device copies and loss read-backs are
// queued on the compute stream, so each must be ordered against the kernels around it with no
// host synchronise in between. Each test keeps the stream busy first, so a missing order shows
// as a wrong value rather than passing by luck.
#include <cmath>

#include <gtest/gtest.h>

#include "harness/memory/alloc_config.hpp"
#include "harness/testing/require_gpu.hpp"
#include "kernels/testing/random_fill.hpp"
#include "scenarios/models/srgan/scalar_readback.hpp"
#include "scenarios/models/srgan/tests/busy_stream.hpp"
#include "scenarios/models/srgan/trainer.hpp"

namespace oomlab::srgan {
namespace {

TEST(StepSyncGpu, DeviceCopiesAreStreamOrdered) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, memory::AllocatorConfig{});
  const std::vector<float> values = testing::random_values(6 * 1000, 3);
  Tensor source = Tensor::from_host(device, {6, 1000}, DType::f32, values);
  Tensor both = Tensor::empty(device, {12, 1000}, DType::f32);
  occupy_stream(device);
  both.slice(0, 6).copy_from(source);  // queued behind the busy work
  source.fill(-1.0);                   // a kernel after the copy: must not reach it
  both.slice(6, 12).copy_from(source);
  const std::vector<float> got = both.to_host_f32();
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(got[i], values[i]) << i;
  for (std::size_t i = values.size(); i < got.size(); ++i) ASSERT_EQ(got[i], -1.0f) << i;
}

TEST(StepSyncGpu, ReadbackHoldsTheValuesQueuedBeforeLaterKernels) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, memory::AllocatorConfig{});
  ScalarReadback readback(device, 4);
  {
    Tensor values = Tensor::from_host(device, {4}, DType::f32, {1.5f, -2.0f, 3.25f, 0.125f});
    occupy_stream(device);
    values.fill(7.0);  // queued behind the busy work
    readback.queue(values, 0);
  }  // freed while the copy is queued; the next allocation of that size reuses the block
  Tensor reused = Tensor::empty(device, {4}, DType::f32);
  reused.fill(-9.0);
  readback.wait();
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(readback.value(i), 7.0f) << i;
}

// The whole step on cuda against the host reference: the same losses within the kernels'
// f32 tolerance, step by step (the stream-ordered copies and the one read-back change no value).
TEST(StepSyncGpu, TrainerLossesTrackTheHostStepByStep) {
  OOMLAB_REQUIRE_GPU();
  auto train = [](DeviceKind kind) {
    Device device(kind, memory::AllocatorConfig{});
    SrganTrainer trainer(device, SrganConfig::tiny());
    SyntheticPairs data(5, 8);
    std::vector<SrganLosses> losses;
    for (int step = 0; step < 3; ++step) {
      const ImageBatch batch = data.batch(device, 2, step, DType::f32);
      if (step + 1 < 3) data.prefetch(device, 2, step + 1, DType::f32);
      losses.push_back(trainer.train_step(batch));
    }
    return losses;
  };
  const auto host = train(DeviceKind::host), cuda = train(DeviceKind::cuda);
  ASSERT_EQ(cuda.size(), host.size());
  for (std::size_t i = 0; i < host.size(); ++i) {
    const double tolerance = i == 0 ? 2e-3 : 2e-2;  // relative; training drifts apart a little
    auto near = [&](float got, float want, const char* name) {
      EXPECT_TRUE(std::isfinite(got)) << name << " step " << i;
      EXPECT_NEAR(got, want, tolerance * std::fabs(want) + 1e-6) << name << " step " << i;
    };
    near(cuda[i].discriminator, host[i].discriminator, "discriminator");
    near(cuda[i].pixel, host[i].pixel, "pixel");
    near(cuda[i].feature_matching, host[i].feature_matching, "feature_matching");
    near(cuda[i].adversarial, host[i].adversarial, "adversarial");
    near(cuda[i].generator, host[i].generator, "generator");
  }
}

}  // namespace
}  // namespace oomlab::srgan
