// Grouped-query attention sizes everything K/V by the KV heads: the fused projection and its
// bias, the output projection's input, the K/V activations, the LoRA adapter on q/k/v; an nf4
// base is half a byte per projection weight plus bitsandbytes' double-quantised scales; and a
// GQA model's dry plan is deterministic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "scenarios/models/transformer/tests/test_support.hpp"

namespace oomlab::model {
namespace {

using testing::random_batch;

// Six steps on one batch (the loss falls where `expect_learning`), then every allocator request's
// size so far: what host and dry are compared on.
std::vector<std::size_t> train_and_list_requests(Transformer& model, Device& device, const TransformerConfig& config,
                                                 bool expect_learning) {
  Trainer trainer(model);
  const auto [first, last] = testing::first_and_last_loss(trainer, {random_batch(device, config, 2, 16, 8)}, 6);
  if (expect_learning) {
    EXPECT_LT(last, first);
  }
  std::vector<std::size_t> requests;
  for (const auto& event : device.allocator().trace().events()) requests.push_back(event.bytes);
  return requests;
}

Shape shape_of(const TransformerConfig& config, Tensor ParameterTensors::*member) {
  for (const ParameterSpec& spec : parameter_specs(config)) {
    if (spec.member == member) return spec.shape;
  }
  return {};
}

TEST(GroupedQuery, ParametersAreSizedByTheKvHeads) {
  const TransformerConfig llama3 = transformer_preset("llama-3-8b");  // 32 heads, 8 KV heads of 128
  EXPECT_EQ(shape_of(llama3, &ParameterTensors::qkv_w), (Shape{32, 4096 + 2 * 1024, 4096}));
  EXPECT_EQ(shape_of(llama3, &ParameterTensors::attn_proj_w), (Shape{32, 4096, 4096}));
  EXPECT_EQ(shape_of(llama3, &ParameterTensors::qkv_b), Shape{});  // Llama: no biases
  EXPECT_EQ(shape_of(llama3, &ParameterTensors::lm_head), (Shape{128256, 4096}));
  EXPECT_EQ(parameter_elements(llama3), llama3.parameter_count());  // 128256 needs no padding
  const TransformerConfig qwen = transformer_preset("qwen2.5-7b");  // 28 heads, 4 KV heads
  EXPECT_EQ(shape_of(qwen, &ParameterTensors::qkv_b), (Shape{28, 3584 + 2 * 512}));
  EXPECT_EQ(parameter_elements(qwen), qwen.parameter_count());
}

TEST(GroupedQuery, KAndVActivationsShrinkByTheGroupSize) {
  TransformerConfig gqa = transformer_preset("llama-3-8b");
  TransformerConfig mha = gqa;
  mha.kv_heads = mha.heads;
  TrainOptions options = testing::fused_options(Precision::bf16);
  const std::int64_t B = 2, T = 1024;
  const ActivationShapes shapes = activation_shapes(gqa, B, T);
  EXPECT_EQ(shapes.kv_heads, (Shape{B, 8, T, 128}));
  EXPECT_EQ(shapes.qkv, (Shape{B, T, 6144}));
  // k and v: (32 - 8) heads x 128 x 2 bytes per token each.
  EXPECT_EQ(block_activation_bytes(mha, options, B, T) - block_activation_bytes(gqa, options, B, T),
            std::size_t{2} * B * T * 24 * 128 * 2);
}

TEST(GroupedQuery, TheQkvAdapterOutputsHPlusTwoHkvHeads) {
  const TransformerConfig config = transformer_preset("llama-3-8b");
  TrainOptions options;
  options.precision = Precision::bf16;
  options.lora.rank = 16;
  const std::size_t C = 4096, F = 14336, L = 32, r = 16, QKV = 6144;
  // One A (r, C) and one B (QKV, r) on the fused projection: PEFT's q_proj, k_proj and v_proj have
  // the same B rows (4096 + 1024 + 1024) but three A's, 2 x r x C more per layer (0.2% of the 42M).
  EXPECT_EQ(adapter_elements(config, options), L * r * ((C + QKV) + (C + C) + 3 * (F + C)));
}

TEST(GroupedQuery, AnNf4BaseIsHalfAByteAPerProjectionWeightPlusDoubleQuantisedScales) {
  const TransformerConfig config = transformer_preset("llama-3-8b");
  const auto [options, saved] = testing::quantised_base(config, &LoraOptions::nf4_base);
  const std::size_t L = 32, C = 4096, F = 14336;
  const std::size_t per_layer[] = {6144 * C, C * C, F * C, F * C, C * F};  // qkv, o, gate, up, down
  std::size_t weights = 0, scales = 0;
  for (std::size_t n : per_layer) {
    const std::size_t blocks = n / 64;
    weights += L * n;
    scales += L * (blocks + ((blocks + 255) / 256 + 1) * 4);  // a byte per block, an f32 per 256 blocks, the offset
  }
  EXPECT_EQ(nf4_scale_bytes(config, options), scales);
  EXPECT_EQ(saved, weights * 2 - (weights / 2 + scales));
  // QLoRA's figure: 4 + 8/64 + 32/(64*256) bits = 4.127 bits per weight.
  EXPECT_NEAR(8.0 * static_cast<double>(weights / 2 + scales) / static_cast<double>(weights), 4.127, 0.001);
  TrainOptions both = options;
  both.lora.int8_base = true;
  Device device(DeviceKind::dry, testing::unlimited_config());
  EXPECT_THROW(Transformer(device, transformer_preset("llama-tiny"), both, 1), std::exception);
  TrainOptions no_adapters;
  no_adapters.lora.nf4_base = true;
  EXPECT_THROW(Transformer(device, transformer_preset("llama-tiny"), no_adapters, 1), std::exception);
}

// QLoRA on host: the nf4 base multiplies as its dequantised blocks (within NF4's 16 levels of the
// f32 weights it was made from), the adapters learn, and dry makes the same allocations (the
// quantiser's workspace included) in the same order.
TEST(GroupedQuery, AnNf4BaseTrainsOnHostAndDryPlansItsAllocations) {
  const TransformerConfig config = transformer_preset("llama-tiny");
  std::vector<std::size_t> requests[2];
  for (DeviceKind kind : {DeviceKind::host, DeviceKind::dry}) {
    Device device(kind, testing::unlimited_config());
    TrainOptions options = testing::fused_options(Precision::bf16);
    options.lora.rank = 8;
    options.lora.nf4_base = true;
    Transformer model(device, config, options, 5);
    if (kind == DeviceKind::host) {
      TrainOptions plain = options;
      plain.lora.nf4_base = false;
      Device own(DeviceKind::host, testing::unlimited_config());  // not in the compared trace
      Transformer quantised(own, config, options, 5);
      Transformer reference(own, config, plain, 5);  // the same seed: the bf16 weights nf4 was made from
      const std::vector<float> w = layer_slice(reference.params().fc_w, 1).to_host_f32();
      const std::vector<float> q =
          quantised.projections().weight(Projection::mlp_in, 1, quantised.params()).to_host_f32();
      ASSERT_EQ(q.size(), w.size());
      float absmax = 0, worst = 0;
      for (std::size_t i = 0; i < w.size(); ++i) {
        absmax = std::max(absmax, std::fabs(w[i]));
        worst = std::max(worst, std::fabs(q[i] - w[i]));
      }
      EXPECT_GT(worst, 0.0f);             // quantised, not a copy
      EXPECT_LT(worst, 0.16f * absmax);   // NF4's widest gap is 0.28 of a block's absmax: half of it
    }
    requests[kind == DeviceKind::dry] = train_and_list_requests(model, device, config, kind == DeviceKind::host);
  }
  EXPECT_EQ(requests[0], requests[1]);
}

// A small GQA model (4 query heads of 64 over 2 KV heads: H*D = 256 is not C = 128, Qwen2-style
// biases, untied) on dry, twice:
// the same allocations in the same order and the same peak, with and without LoRA on nf4.
TEST(GroupedQuery, ADryPlanIsDeterministic) {
  TransformerConfig config = transformer_preset("llama-tiny");
  config.name = "gqa-tiny";
  config.heads = 4;
  config.kv_heads = 2;
  config.head_size = 64;  // the fused kernel's head dims: 64 or 128
  config.qkv_bias = true;
  for (bool qlora : {false, true}) {
    std::vector<std::size_t> requests[2];
    std::int64_t peaks[2] = {0, 0};
    for (int run = 0; run < 2; ++run) {
      Device device(DeviceKind::dry, testing::unlimited_config());
      TrainOptions options = testing::fused_options(Precision::bf16);
      options.checkpointing = true;
      options.lora.rank = qlora ? 8 : 0;
      options.lora.nf4_base = qlora;
      Transformer model(device, config, options, 5);
      Trainer trainer(model);
      trainer.step({random_batch(device, config, 2, 16, 8)});
      for (const auto& event : device.allocator().trace().events()) requests[run].push_back(event.bytes);
      peaks[run] = device.allocator().stats().allocated.peak;
    }
    EXPECT_EQ(requests[0], requests[1]) << "qlora " << qlora;
    EXPECT_EQ(peaks[0], peaks[1]);
    EXPECT_GT(peaks[0], 0);
  }
}

// On host the GQA model learns (its attention shares each K/V head among 2 query heads), and dry
// makes the same allocations as host, in the same order: the plan of a GQA model is its run's.
TEST(GroupedQuery, OnHostItTrainsAndDryMakesTheSameAllocations) {
  TransformerConfig config = transformer_preset("llama-tiny");
  config.heads = 4;
  config.kv_heads = 2;
  config.head_size = 64;
  std::vector<std::size_t> requests[2];
  for (DeviceKind kind : {DeviceKind::host, DeviceKind::dry}) {
    Device device(kind, testing::unlimited_config());
    TrainOptions options = testing::fused_options(Precision::bf16);
    Transformer model(device, config, options, 5);
    requests[kind == DeviceKind::dry] = train_and_list_requests(model, device, config, kind == DeviceKind::host);
  }
  EXPECT_EQ(requests[0], requests[1]);
}

}  // namespace
}  // namespace oomlab::model
