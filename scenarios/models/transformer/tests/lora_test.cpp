// LoRA and the int8 base on host in f32: the adapters' gradients are exactly what the merged model
// W + B A says (dB = dW A^T, dA = B^T dW, with dW the plain model's gradient of the merged weight),
// the frozen base gets no gradient and no update, and an int8 base behaves as its dequantised rows.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernels/core/host_values.hpp"
#include "scenarios/models/transformer/tests/test_support.hpp"

namespace oomlab::model {
namespace {

using testing::random_batch;

constexpr Projection kAll[] = {Projection::qkv, Projection::attn_out, Projection::mlp_in,
                               Projection::mlp_up, Projection::mlp_down};

// Row-major (rows, cols) matrix of host floats.
struct Matrix {
  std::int64_t rows, cols;
  std::vector<float> v;
  float at(std::int64_t r, std::int64_t c) const { return v[static_cast<std::size_t>(r * cols + c)]; }
};

Matrix matrix_of(const Tensor& t) { return Matrix{t.dim(0), t.dim(1), t.to_host_f32()}; }

void set_random(Tensor& t, std::uint32_t seed) {
  const auto values = oomlab::testing::random_values(static_cast<std::size_t>(t.numel()), seed, -0.3f, 0.3f);
  t.copy_from_host(values.data(), values.size() * sizeof(float));
}

struct LoraCase {
  const char* preset;
  bool int8_base;
  bool nf4_base = false;
};

class LoraGradient : public ::testing::TestWithParam<LoraCase> {};

TEST_P(LoraGradient, AdapterGradientsAreTheMergedModelsProjectedGradients) {
  const auto [preset, int8_base, nf4_base] = GetParam();
  Device device(DeviceKind::host, testing::unlimited_config());
  const TransformerConfig config = transformer_preset(preset);
  TrainOptions options;
  options.lora.rank = 4;
  options.lora.int8_base = int8_base;
  options.lora.nf4_base = nf4_base;
  Transformer lora(device, config, options, 7);
  Transformer merged(device, config, TrainOptions{}, 7);  // the same seed: the same base
  ASSERT_EQ(lora.trainable_tensors().size(), config.is_gpt2() ? 8u : 10u);
  std::uint32_t seed = 40;
  for (Tensor& adapter : lora.trainable_tensors()) set_random(adapter, seed++);  // B != 0: dA too

  // merged's projection weights: the lora model's base as it multiplies (dequantised when int8)
  // plus B A, layer by layer.
  const std::vector<Tensor> adapters = lora.trainable_tensors();
  std::size_t next = 0;
  for (Projection which : kAll) {
    if (!lora.projections().adapted(which)) continue;
    const Tensor& a_all = adapters[next++];
    const Tensor& b_all = adapters[next++];
    for (std::int64_t l = 0; l < config.layers; ++l) {
      Matrix w = matrix_of(lora.projections().weight(which, l, lora.params()));
      const Matrix a = matrix_of(layer_slice(a_all, l)), b = matrix_of(layer_slice(b_all, l));
      for (std::int64_t o = 0; o < w.rows; ++o) {
        for (std::int64_t i = 0; i < w.cols; ++i) {
          double sum = w.at(o, i);
          for (std::int64_t k = 0; k < a.rows; ++k) sum += double(b.at(o, k)) * a.at(k, i);
          w.v[static_cast<std::size_t>(o * w.cols + i)] = static_cast<float>(sum);
        }
      }
      Tensor target = layer_slice(merged.params().*projection_member(which), l);
      target.copy_from_host(w.v.data(), w.v.size() * sizeof(float));
    }
  }

  const MicroBatch batch = random_batch(device, config, 2, 8, 5);
  for (Transformer* model : {&lora, &merged}) {
    model->zero_grads();
    model->forward(batch.tokens, batch.targets, 1.0f / 16.0f);
  }
  EXPECT_NEAR(lora.mean_loss(), merged.mean_loss(), 1e-5);
  lora.backward();
  merged.backward();

  const std::vector<Tensor> grads = lora.trainable_gradients();
  next = 0;
  for (Projection which : kAll) {
    if (!lora.projections().adapted(which)) continue;
    const std::size_t index = next;
    next += 2;
    for (std::int64_t l = 0; l < config.layers; ++l) {
      const Matrix dw = matrix_of(merged.gradient(projection_member(which), l));
      const Matrix a = matrix_of(layer_slice(adapters[index], l)), b = matrix_of(layer_slice(adapters[index + 1], l));
      const Matrix da = matrix_of(layer_slice(grads[index], l)), db = matrix_of(layer_slice(grads[index + 1], l));
      double scale = 0;
      for (float g : dw.v) scale = std::max(scale, double(std::fabs(g)));
      for (std::int64_t k = 0; k < a.rows; ++k) {
        for (std::int64_t i = 0; i < a.cols; ++i) {  // dA = B^T dW
          double expected = 0;
          for (std::int64_t o = 0; o < b.rows; ++o) expected += double(b.at(o, k)) * dw.at(o, i);
          ASSERT_NEAR(da.at(k, i), expected, 1e-4 * scale + 1e-6) << "dA layer " << l << " (" << k << ", " << i << ")";
        }
      }
      for (std::int64_t o = 0; o < b.rows; ++o) {
        for (std::int64_t k = 0; k < b.cols; ++k) {  // dB = dW A^T
          double expected = 0;
          for (std::int64_t i = 0; i < a.cols; ++i) expected += double(dw.at(o, i)) * a.at(k, i);
          ASSERT_NEAR(db.at(o, k), expected, 1e-4 * scale + 1e-6) << "dB layer " << l << " (" << o << ", " << k << ")";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TinyHost, LoraGradient,
                         ::testing::Values(LoraCase{"gpt2-tiny", false}, LoraCase{"llama-tiny", false},
                                           LoraCase{"llama-tiny", true}, LoraCase{"llama-tiny", false, true}),
                         [](const auto& info) {
                           std::string name = info.param.preset;
                           for (char& c : name) if (c == '-') c = '_';
                           return name + (info.param.int8_base ? "_int8_base" : "") +
                                  (info.param.nf4_base ? "_nf4_base" : "");
                         });

TEST(Lora, TheBaseIsFrozenAndOnlyTheAdaptersTrain) {
  Device device(DeviceKind::host, testing::unlimited_config());
  const TransformerConfig config = transformer_preset("llama-tiny");
  TrainOptions options = testing::fused_options(Precision::bf16);
  options.lora.rank = 8;
  options.lora.targets = LoraTargets::attention;
  Transformer model(device, config, options, 3);
  EXPECT_TRUE(model.projections().adapted(Projection::attn_out));
  EXPECT_FALSE(model.projections().adapted(Projection::mlp_in));
  // qkv: A (8, C), B (3C, 8); attention output: A (8, C), B (C, 8); per layer.
  const auto adapters = static_cast<std::size_t>(config.layers * 8 * ((config.channels + 3 * config.channels) +
                                                                      (config.channels + config.channels)));
  EXPECT_EQ(model.trainable_elements(), adapters);
  EXPECT_EQ(model.gradient_bytes(), adapters * 2 + 2 * static_cast<std::size_t>(config.channels) * 4);

  const std::vector<float> base_before = model.params().qkv_w.to_host_f32();
  const std::vector<float> embedding_before = model.params().wte.to_host_f32();
  const std::vector<float> b_before = model.trainable_tensors()[1].to_host_f32();
  Trainer trainer(model);
  const auto [first, last] = testing::first_and_last_loss(trainer, {random_batch(device, config, 2, 16, 9)}, 8);
  EXPECT_EQ(model.params().qkv_w.to_host_f32(), base_before);
  EXPECT_EQ(model.params().wte.to_host_f32(), embedding_before);
  EXPECT_NE(model.trainable_tensors()[1].to_host_f32(), b_before);  // B left zero: it learned
  EXPECT_LT(last, first);
  EXPECT_FALSE(model.gradient(&ParameterTensors::qkv_w, 0).defined());  // no gradient for any base tensor
  EXPECT_FALSE(model.gradient(&ParameterTensors::wte, -1).defined());
}

TEST(Lora, AnInt8BaseIsAByteAPerProjectionWeightAndNeedsAdapters) {
  Device device(DeviceKind::dry, testing::unlimited_config());
  const TransformerConfig config = transformer_preset("llama-7b");
  const auto [options, saved] = testing::quantised_base(config, &LoraOptions::int8_base);
  const auto C = static_cast<std::size_t>(config.channels), F = static_cast<std::size_t>(config.ffn);
  const auto L = static_cast<std::size_t>(config.layers);
  const std::size_t projection_weights = L * (4 * C * C + 3 * F * C);
  const std::size_t scales = L * (4 * C + 2 * F + C) * sizeof(float);  // a row scale per output row
  EXPECT_EQ(saved, projection_weights - scales);
  // LoRA rank 16 on the seven projections of LLaMA 7B (q, k, v on one fused adapter):
  // 32 layers x 16 x ((3C + C) + (C + C) + 3 x (F + C)).
  EXPECT_EQ(trainable_elements(config, options), L * 16 * ((3 * C + C) + (C + C) + 3 * (F + C)));
  TrainOptions no_adapters;
  no_adapters.lora.int8_base = true;
  EXPECT_THROW(Transformer(device, transformer_preset("llama-tiny"), no_adapters, 1), std::exception);
}

}  // namespace
}  // namespace oomlab::model
