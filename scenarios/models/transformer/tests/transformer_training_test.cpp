// Training behaviour on host: the loss falls, gradient accumulation matches one big batch,
// offloaded AdamW matches on-device AdamW, f16 overflow skips the step and halves the scale.
#include <gtest/gtest.h>

#include <cmath>

#include "scenarios/models/transformer/tests/test_support.hpp"

namespace oomlab::model {
namespace {

using testing::random_batch;

TEST(TransformerTraining, LossDecreasesOverAFewStepsInEveryPrecision) {
  for (Precision precision : {Precision::f32, Precision::bf16, Precision::f16}) {
    for (const char* preset : {"gpt2-tiny", "llama-tiny"}) {
      Device device(DeviceKind::host, testing::unlimited_config());
      const TransformerConfig config = transformer_preset(preset);
      TrainOptions options;
      options.precision = precision;
      options.attention = precision == Precision::f32 ? AttentionKind::naive : AttentionKind::fused;
      options.adamw.lr = 1e-2f;
      options.initial_loss_scale = 1024.0f;  // tiny batches: 65536 would overflow f16 for real
      Transformer model(device, config, options, 11);
      Trainer trainer(model);
      const auto [first, last] = testing::first_and_last_loss(trainer, {random_batch(device, config, 2, 16, 21)}, 4);
      EXPECT_TRUE(std::isfinite(first)) << preset << " " << precision_name(precision);
      EXPECT_LT(last, first - 0.1f) << preset << " " << precision_name(precision);
      // Random init over V tokens starts near ln(V).
      EXPECT_NEAR(first, std::log(static_cast<float>(config.vocab)), 0.5f) << preset;
    }
  }
}

TEST(TransformerTraining, FourMicroBatchesOfEightEqualOneBatchOfThirtyTwo) {
  Device device(DeviceKind::host, testing::unlimited_config());
  const TransformerConfig config = transformer_preset("gpt2-tiny");
  TrainOptions options;
  options.grad_clip = 0;  // compare raw gradients
  Transformer model(device, config, options, 3);
  testing::randomize_parameters(model, 40);
  const MicroBatch big = random_batch(device, config, 32, 4, 9);
  const float dloss = 1.0f / static_cast<float>(big.tokens.numel());

  model.zero_grads();
  model.forward(big.tokens, big.targets, dloss);
  const float big_loss = model.mean_loss();
  model.backward();
  const auto big_grads = testing::gradient_values(model);

  model.zero_grads();
  double accumulated_loss = 0;
  for (std::int64_t micro = 0; micro < 4; ++micro) {
    const MicroBatch part = testing::batch_rows(device, big, micro * 8, micro * 8 + 8);
    model.forward(part.tokens, part.targets, dloss);
    accumulated_loss += model.mean_loss() / 4;
    model.backward();
  }
  const auto accumulated = testing::gradient_values(model);
  EXPECT_NEAR(accumulated_loss, big_loss, 1e-5);
  ASSERT_EQ(big_grads.size(), accumulated.size());
  for (std::size_t i = 0; i < big_grads.size(); ++i) {
    for (std::size_t j = 0; j < big_grads[i].size(); ++j) {
      ASSERT_NEAR(accumulated[i][j], big_grads[i][j], 1e-6f + 1e-4f * std::fabs(big_grads[i][j]))
          << "tensor " << i << " element " << j;
    }
  }
}

TEST(TransformerTraining, OffloadedAdamWMatchesOnDeviceAdamW) {
  for (Precision precision : {Precision::f32, Precision::bf16}) {
    std::vector<std::vector<float>> params[2];
    for (int offload = 0; offload < 2; ++offload) {
      Device device(DeviceKind::host, testing::unlimited_config());
      const TransformerConfig config = transformer_preset("gpt2-tiny");
      TrainOptions options = testing::fused_options(precision);
      options.offload_optimizer = offload == 1;
      Transformer model(device, config, options, 5);
      Trainer trainer(model);
      EXPECT_EQ(trainer.host_state_bytes() > 0, offload == 1);
      const std::vector<MicroBatch> batch = {random_batch(device, config, 2, 8, 8)};
      for (int step = 0; step < 3; ++step) trainer.step(batch);
      for (const Tensor& p : model.trainable_tensors()) params[offload].push_back(p.to_host_f32());
    }
    EXPECT_EQ(params[0], params[1]) << precision_name(precision);
  }
}

TEST(TransformerTraining, Fp16OverflowSkipsTheStepAndHalvesTheScale) {
  Device device(DeviceKind::host, testing::unlimited_config());
  const TransformerConfig config = transformer_preset("gpt2-tiny");
  TrainOptions options = testing::fused_options(Precision::f16);
  options.loss_scale_growth_interval = 2;
  options.initial_loss_scale = 1024.0f;  // no real overflow at this size, only the injected one
  Transformer model(device, config, options, 5);
  Trainer trainer(model);
  const std::vector<MicroBatch> batch = {random_batch(device, config, 2, 8, 8)};

  const StepReport clean = trainer.step(batch);
  EXPECT_TRUE(clean.applied);
  EXPECT_EQ(clean.loss_scale, 1024.0f);
  const auto before = model.trainable_tensors().front().to_host_f32();
  const StepReport overflow = trainer.step(batch, /*inject_overflow=*/true);
  EXPECT_FALSE(overflow.applied);
  EXPECT_EQ(trainer.scaler().scale, 512.0f);
  EXPECT_EQ(trainer.optimizer_steps(), 1);
  EXPECT_EQ(model.trainable_tensors().front().to_host_f32(), before) << "a skipped step changes nothing";
  // Two clean steps in a row grow the scale back.
  EXPECT_TRUE(trainer.step(batch).applied);
  EXPECT_TRUE(trainer.step(batch).applied);
  EXPECT_EQ(trainer.scaler().scale, 1024.0f);
}

TEST(TransformerTraining, OverflowInjectionWithoutLossScalingIsRejected) {
  Device device(DeviceKind::host, testing::unlimited_config());
  const TransformerConfig config = transformer_preset("gpt2-tiny");
  Transformer model(device, config, TrainOptions{}, 5);
  Trainer trainer(model);
  const std::vector<MicroBatch> batch = {random_batch(device, config, 1, 8, 8)};
  EXPECT_THROW(trainer.step(batch, true), std::invalid_argument);
  EXPECT_THROW(trainer.step({}), std::invalid_argument);
}

// Dry does no math but makes the same allocations as host, in the same order.
TEST(TransformerTraining, DryMakesTheSameAllocationsAsHost) {
  for (bool checkpointing : {false, true}) {
    std::vector<std::size_t> requests[2];
    for (DeviceKind kind : {DeviceKind::host, DeviceKind::dry}) {
      Device device(kind, testing::unlimited_config());
      const TransformerConfig config = transformer_preset("llama-tiny");
      TrainOptions options = testing::fused_options(Precision::f16);
      options.checkpointing = checkpointing;
      options.offload_optimizer = true;
      options.initial_loss_scale = 1024.0f;
      Transformer model(device, config, options, 5);
      Trainer trainer(model);
      const std::vector<MicroBatch> batch = {random_batch(device, config, 2, 8, 8)};
      trainer.step(batch);
      trainer.step(batch, true);
      for (const auto& event : device.allocator().trace().events()) {
        requests[kind == DeviceKind::dry].push_back(event.bytes);
      }
    }
    EXPECT_EQ(requests[0], requests[1]) << "checkpointing " << checkpointing;
  }
}

// The plan line's sizes saturate where they pass 2^64 bytes instead of wrapping into a small,
// wrong figure ("248.01PiB per block" for llama-13b at B = T = 2^20).
TEST(MemoryPlan, SizesPast64BitsSayMoreThan16EiB) {
  TrainOptions naive;
  naive.attention = AttentionKind::naive;  // the scores: B x heads x T x T
  const std::string line = describe_memory_plan(transformer_preset("llama-13b"), naive, 1 << 20, 1 << 20);
  EXPECT_NE(line.find("more than 16.00EiB per block"), std::string::npos) << line;
  EXPECT_EQ(line.find("PiB per block"), std::string::npos) << line;
}

}  // namespace
}  // namespace oomlab::model
