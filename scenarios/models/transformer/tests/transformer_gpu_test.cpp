// The model on cuda against the same model on host: one f32 training step of gpt2-tiny gives the
// same loss and gradients (naive attention), bf16 with fused attention trains, and the cuda
// allocator sees exactly the requests dry predicts; the same for a grouped-query model (4 query
// heads over 2 KV heads, q/k/v biases, H*D != C) and for LoRA on an nf4 base.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "harness/testing/require_gpu.hpp"
#include "scenarios/models/transformer/tests/test_support.hpp"

namespace oomlab::model {
namespace {

std::vector<std::size_t> one_step_requests(DeviceKind kind, const TrainOptions& options,
                                           const char* preset) {
  Device device(kind, testing::unlimited_config());
  const TransformerConfig config = transformer_preset(preset);
  Transformer model(device, config, options, 5);
  Trainer trainer(model);
  trainer.step({testing::random_batch(device, config, 4, 64, 8)});
  std::vector<std::size_t> requests;
  for (const auto& event : device.allocator().trace().events()) requests.push_back(event.bytes);
  return requests;
}

TEST(TransformerGpu, F32GradientsMatchTheHostReference) {
  OOMLAB_REQUIRE_GPU();
  std::vector<std::vector<float>> grads[2];
  float losses[2];
  for (DeviceKind kind : {DeviceKind::host, DeviceKind::cuda}) {
    Device device(kind, testing::unlimited_config());
    const TransformerConfig config = transformer_preset("gpt2-tiny");
    Transformer model(device, config, TrainOptions{}, 5);
    const MicroBatch batch = testing::random_batch(device, config, 2, 32, 8);
    model.zero_grads();
    model.forward(batch.tokens, batch.targets, 1.0f / 64);
    losses[kind == DeviceKind::cuda] = model.mean_loss();
    model.backward();
    grads[kind == DeviceKind::cuda] = testing::gradient_values(model);
  }
  EXPECT_NEAR(losses[0], losses[1], 1e-4f);
  for (std::size_t i = 0; i < grads[0].size(); ++i) {
    float max_ref = 0;
    for (float g : grads[0][i]) max_ref = std::fmax(max_ref, std::fabs(g));
    for (std::size_t j = 0; j < grads[0][i].size(); ++j) {
      // TF32 may be used by cuBLASLt for f32: tolerance relative to the tensor's scale.
      ASSERT_NEAR(grads[1][i][j], grads[0][i][j], 1e-2f * max_ref + 1e-6f) << "tensor " << i << " [" << j << "]";
    }
  }
}

TEST(TransformerGpu, Bf16FusedTrainingLowersTheLoss) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, testing::unlimited_config());
  const TransformerConfig config = transformer_preset("gpt2-small");
  TrainOptions options = testing::fused_options(Precision::bf16);
  options.adamw.lr = 1e-3f;
  Transformer model(device, config, options, 5);
  Trainer trainer(model);
  const auto [first, last] =
      testing::first_and_last_loss(trainer, {testing::random_batch(device, config, 4, 128, 8)}, 9);
  EXPECT_TRUE(std::isfinite(first));
  EXPECT_LT(last, first - 0.1f);
}

// The offloaded optimizer's copies run on two copy streams around the compute stream: a missing
// wait would update from stale or half-copied state. After 3 steps the parameters must match an
// on-device AdamW (atomics in some backward kernels make the last bits differ run to run, so
// the check has a tolerance; a race shows up far outside it).
TEST(TransformerGpu, OffloadedAdamWMatchesOnDeviceAdamWOnCuda) {
  OOMLAB_REQUIRE_GPU();
  for (Precision precision : {Precision::f32, Precision::bf16}) {
    std::vector<std::vector<float>> params[2];
    for (int offload = 0; offload < 2; ++offload) {
      Device device(DeviceKind::cuda, memory::AllocatorConfig{});
      const TransformerConfig config = transformer_preset("gpt2-small");
      TrainOptions options;
      options.precision = precision;
      options.attention = precision == Precision::f32 ? AttentionKind::naive : AttentionKind::fused;
      options.offload_optimizer = offload == 1;
      Transformer model(device, config, options, 5);
      Trainer trainer(model);
      const std::vector<MicroBatch> batch = {testing::random_batch(device, config, 2, 64, 8)};
      for (int step = 0; step < 3; ++step) trainer.step(batch);
      for (const Tensor& p : model.trainable_tensors()) params[offload].push_back(p.to_host_f32());
    }
    const double rtol = precision == Precision::f32 ? 1e-3 : 2e-2;
    ASSERT_EQ(params[0].size(), params[1].size());
    for (std::size_t i = 0; i < params[0].size(); ++i) {
      ASSERT_EQ(params[0][i].size(), params[1][i].size());
      for (std::size_t j = 0; j < params[0][i].size(); ++j) {
        const double a = params[0][i][j], b = params[1][i][j];
        ASSERT_LE(std::fabs(a - b), 1e-3 + rtol * std::fabs(a))
            << precision_name(precision) << ": tensor " << i << " element " << j;
      }
    }
  }
}

TEST(TransformerGpu, CudaMakesExactlyTheRequestsDryPredicts) {
  OOMLAB_REQUIRE_GPU();
  TrainOptions options = testing::fused_options(Precision::bf16);
  options.offload_optimizer = true;
  EXPECT_EQ(one_step_requests(DeviceKind::cuda, options, "gpt2-small"),
            one_step_requests(DeviceKind::dry, options, "gpt2-small"));
  options.checkpointing = true;
  options.precision = Precision::f32;
  options.attention = AttentionKind::naive;
  EXPECT_EQ(one_step_requests(DeviceKind::cuda, options, "llama-small"),
            one_step_requests(DeviceKind::dry, options, "llama-small"));
}

// A grouped-query model small enough for host: its first loss on cuda as on host (bf16, fused
// attention sharing each K/V head between two query heads), and cuda's requests are dry's.
TransformerConfig tiny_gqa() {
  TransformerConfig config = transformer_preset("llama-tiny");
  config.name = "gqa-tiny";
  config.heads = 4;
  config.kv_heads = 2;
  config.head_size = 64;  // H*D = 256, C = 128
  config.qkv_bias = true;
  return config;
}

std::pair<float, std::vector<std::size_t>> gqa_step(DeviceKind kind, const TrainOptions& options) {
  Device device(kind, testing::unlimited_config());
  const TransformerConfig config = tiny_gqa();
  Transformer model(device, config, options, 5);
  Trainer trainer(model);
  const StepReport report = trainer.step({testing::random_batch(device, config, 2, 32, 8)});
  std::vector<std::size_t> requests;
  for (const auto& event : device.allocator().trace().events()) requests.push_back(event.bytes);
  return {report.loss, requests};
}

TEST(TransformerGpu, GroupedQueryAndNf4OnCudaAsOnHostAndDry) {
  OOMLAB_REQUIRE_GPU();
  TrainOptions options = testing::fused_options(Precision::bf16);
  for (bool nf4 : {false, true}) {
    options.lora.rank = nf4 ? 8 : 0;
    options.lora.nf4_base = nf4;
    const auto cuda = gqa_step(DeviceKind::cuda, options);
    const auto host = gqa_step(DeviceKind::host, options);
    const auto dry = gqa_step(DeviceKind::dry, options);
    EXPECT_NEAR(cuda.first, host.first, 2e-2f * host.first) << "nf4 " << nf4;  // bf16 sums in another order
    EXPECT_EQ(cuda.second, dry.second) << "nf4 " << nf4;
    EXPECT_EQ(host.second, dry.second) << "nf4 " << nf4;
  }
}

}  // namespace
}  // namespace oomlab::model
