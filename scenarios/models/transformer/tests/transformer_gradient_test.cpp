// The explicit backward against finite differences, and checkpointing against the plain run, on
// tiny GPT-2 and LLaMA configs on host in f32.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/testing/finite_difference.hpp"
#include "scenarios/models/transformer/tests/test_support.hpp"

namespace oomlab::model {
namespace {

using testing::random_batch;
using testing::randomize_parameters;

struct GradientCase {
  const char* preset;
  AttentionKind attention;
};

class TransformerGradient : public ::testing::TestWithParam<GradientCase> {};

// A few elements of every parameter tensor: the analytic gradient of the mean loss equals the
// central difference of the loss.
TEST_P(TransformerGradient, MatchesFiniteDifferences) {
  const auto [preset, attention] = GetParam();
  Device device(DeviceKind::host, testing::unlimited_config());
  TransformerConfig config = transformer_preset(preset);
  config.layers = 1;  // one block covers every op; keeps the many forwards quick
  TrainOptions options;
  options.attention = attention;
  Transformer model(device, config, options, 7);
  randomize_parameters(model, 100);
  const MicroBatch batch = random_batch(device, config, 2, 8, 5);
  const float dloss = 1.0f / 16.0f;

  model.zero_grads();
  model.forward(batch.tokens, batch.targets, dloss);
  model.backward();
  std::vector<Tensor> params = model.trainable_tensors();
  std::vector<Tensor> grads = model.trainable_gradients();
  auto loss = [&] {
    model.forward(batch.tokens, batch.targets, std::nullopt);
    return static_cast<double>(model.mean_loss());
  };
  const std::vector<ParameterSpec> specs = parameter_specs(config);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::vector<float> analytic = grads[i].to_host_f32();
    float* data = params[i].data_as<float>();
    // Three elements spread over the tensor; positions with no gradient (unused wpe rows,
    // embedding rows of absent tokens) are legitimately zero in both.
    for (std::int64_t pick : {std::int64_t{0}, params[i].numel() / 2, params[i].numel() - 1}) {
      const float saved = data[pick];
      const float h = 1e-2f;
      data[pick] = saved + h;
      const double plus = loss();
      data[pick] = saved - h;
      const double minus = loss();
      data[pick] = saved;
      const double numeric = (plus - minus) / (2.0 * h);
      EXPECT_NEAR(analytic[static_cast<std::size_t>(pick)], numeric, 2e-3 + 2e-2 * std::fabs(numeric))
          << specs[i].name << "[" << pick << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TinyHost, TransformerGradient,
                         ::testing::Values(GradientCase{"gpt2-tiny", AttentionKind::naive},
                                           GradientCase{"llama-tiny", AttentionKind::naive}),
                         [](const auto& info) {
                           std::string name = info.param.preset;
                           for (char& c : name) if (c == '-') c = '_';
                           return name + "_" + attention_name(info.param.attention);
                         });

// Recomputing each block in backward gives bit-identical gradients on host (same ops, same
// order), and keeps far fewer activation bytes alive.
TEST(TransformerCheckpointing, GradientsEqualThePlainRunExactlyWithLessActivationMemory) {
  for (const char* preset : {"gpt2-tiny", "llama-tiny"}) {
    std::vector<std::vector<float>> grads[2];
    std::int64_t activation_peak[2] = {0, 0};
    for (int checkpointing = 0; checkpointing < 2; ++checkpointing) {
      Device device(DeviceKind::host, testing::unlimited_config());
      TransformerConfig config = transformer_preset(preset);
      config.layers = 4;
      TrainOptions options;
      options.checkpointing = checkpointing == 1;
      Transformer model(device, config, options, 7);
      randomize_parameters(model, 100);
      const MicroBatch batch = random_batch(device, config, 2, 16, 5);
      model.zero_grads();
      device.allocator().reset_peak_stats();
      model.forward(batch.tokens, batch.targets, 1.0f / 32);
      model.backward();
      grads[checkpointing] = testing::gradient_values(model);
      activation_peak[checkpointing] = device.allocator().stats().tag(memory::Tag::activations).peak;
    }
    ASSERT_EQ(grads[0].size(), grads[1].size());
    for (std::size_t i = 0; i < grads[0].size(); ++i) {
      EXPECT_EQ(grads[0][i], grads[1][i]) << preset << " gradient " << i;
    }
    EXPECT_GE(activation_peak[0], 2 * activation_peak[1])
        << preset << ": plain " << activation_peak[0] << " vs checkpointed " << activation_peak[1];
  }
}

// The fused path (bf16 attention) computes the same gradients as the naive path (f32
// attention) up to bf16 rounding of q, k, v and the attention output.
TEST(TransformerAttention, FusedGradientsAgreeWithNaiveWithinBf16Rounding) {
  std::vector<std::vector<float>> grads[2];
  for (AttentionKind kind : {AttentionKind::naive, AttentionKind::fused}) {
    Device device(DeviceKind::host, testing::unlimited_config());
    const TransformerConfig config = transformer_preset("gpt2-tiny");
    TrainOptions options;
    options.attention = kind;
    Transformer model(device, config, options, 7);
    randomize_parameters(model, 100);
    const MicroBatch batch = random_batch(device, config, 2, 16, 5);
    model.zero_grads();
    model.forward(batch.tokens, batch.targets, 1.0f / 32);
    model.backward();
    grads[kind == AttentionKind::fused] = testing::gradient_values(model);
  }
  for (std::size_t i = 0; i < grads[0].size(); ++i) {
    float scale = 0;
    for (float g : grads[0][i]) scale = std::fmax(scale, std::fabs(g));
    for (std::size_t j = 0; j < grads[0][i].size(); ++j) {
      ASSERT_NEAR(grads[1][i][j], grads[0][i][j], 0.05f * scale + 1e-6f) << "tensor " << i << " [" << j << "]";
    }
  }
}

TEST(TransformerInputs, BadShapesAndBackwardWithoutDlossThrowClearly) {
  Device device(DeviceKind::host, testing::unlimited_config());
  const TransformerConfig config = transformer_preset("gpt2-tiny");
  Transformer model(device, config, TrainOptions{}, 7);
  const MicroBatch too_long = random_batch(device, config, 1, config.max_seq + 1, 3);
  EXPECT_THROW(model.forward(too_long.tokens, too_long.targets, 1.0f), std::invalid_argument);
  const MicroBatch batch = random_batch(device, config, 1, 8, 3);
  Tensor float_tokens = Tensor::zeros(device, {1, 8}, DType::f32);
  EXPECT_THROW(model.forward(float_tokens, batch.targets, 1.0f), std::invalid_argument);
  model.forward(batch.tokens, batch.targets, std::nullopt);
  EXPECT_THROW(model.backward(), std::invalid_argument);
  EXPECT_THROW(transformer_preset("gpt5"), std::invalid_argument);
}

TEST(TransformerPresets, ParameterCountsMatchTheModels) {
  EXPECT_EQ(transformer_preset("gpt2-124m").parameter_count(), 124439808u);
  EXPECT_EQ(transformer_preset("llama-7b").parameter_count(), 6738415616u);
  EXPECT_EQ(transformer_preset("gpt2-124m").padded_vocab(), 50304);
  for (const std::string& name : transformer_preset_names()) {
    const TransformerConfig config = transformer_preset(name);
    // The tensors hold the padded vocabulary rows (one table for gpt2, two for llama) on top.
    const std::size_t padding_rows = static_cast<std::size_t>(config.padded_vocab() - config.vocab) *
                                     (config.is_gpt2() ? 1 : 2);
    EXPECT_EQ(config.parameter_count() + padding_rows * static_cast<std::size_t>(config.channels),
              parameter_elements(config)) << name;
    EXPECT_EQ(config.padded_vocab() % 64, 0) << name;
  }
}

}  // namespace
}  // namespace oomlab::model
