// Shared pieces of the transformer model tests: a host device, seeded token batches, and
// parameters re-randomised so no bias or norm weight is a trivial 0 or 1.
#pragma once
#include <cstdint>
#include <vector>

#include "harness/device/device.hpp"
#include "kernels/testing/random_fill.hpp"
#include "scenarios/models/transformer/trainer.hpp"
#include "scenarios/models/transformer/transformer.hpp"

namespace oomlab::model::testing {

inline memory::AllocatorConfig unlimited_config() {
  memory::AllocatorConfig config;
  config.budget = std::size_t{8} << 30;
  return config;
}

// `precision` training on the fused attention kernels (the training scenarios' path), for a
// test to adjust.
inline TrainOptions fused_options(Precision precision) {
  TrainOptions options;
  options.precision = precision;
  options.attention = AttentionKind::fused;
  return options;
}

// bf16 LoRA adapters of rank 16 on a base quantised as `base` says (&LoraOptions::int8_base or
// &LoraOptions::nf4_base), and the parameter bytes the quantised base saves over the bf16 one.
struct QuantisedBase {
  TrainOptions options;
  std::size_t saved_bytes;
};
inline QuantisedBase quantised_base(const TransformerConfig& config, bool LoraOptions::*base) {
  TrainOptions options;
  options.precision = Precision::bf16;
  options.lora.rank = 16;
  const std::size_t bf16_base = parameter_bytes(config, options);
  options.lora.*base = true;
  return {options, bf16_base - parameter_bytes(config, options)};
}

inline MicroBatch random_batch(Device& device, const TransformerConfig& config, std::int64_t batch,
                               std::int64_t seq, std::uint32_t seed) {
  const auto n = static_cast<std::size_t>(batch * seq);
  return MicroBatch{
      Tensor::from_host(device, {batch, seq}, DType::i32, oomlab::testing::random_indices(n, config.vocab, seed)),
      Tensor::from_host(device, {batch, seq}, DType::i32,
                        oomlab::testing::random_indices(n, config.vocab, seed + 1))};
}

// The losses of the first and the last of `steps` training steps on the same batch.
struct FirstAndLastLoss {
  float first, last;
};
inline FirstAndLastLoss first_and_last_loss(Trainer& trainer, const std::vector<MicroBatch>& batch, int steps) {
  FirstAndLastLoss loss{trainer.step(batch).loss, 0};
  loss.last = loss.first;
  for (int step = 1; step < steps; ++step) loss.last = trainer.step(batch).loss;
  return loss;
}

// Rows [begin, end) of a batch (a micro-batch of it), copied.
inline MicroBatch batch_rows(Device& device, const MicroBatch& full, std::int64_t begin, std::int64_t end) {
  auto rows = [&](const Tensor& t) {
    Tensor part = Tensor::empty(device, {end - begin, t.dim(1)}, DType::i32);
    part.copy_from(t.slice(begin, end));
    return part;
  };
  return MicroBatch{rows(full.tokens), rows(full.targets)};
}

// Every f32 parameter set to seeded values in [-0.3, 0.3) (never zero).
inline void randomize_parameters(Transformer& model, std::uint32_t seed) {
  for (Tensor& param : model.trainable_tensors()) {
    std::vector<float> values = oomlab::testing::random_values(
        static_cast<std::size_t>(param.numel()), seed++, -0.3f, 0.3f);
    param.copy_from_host(values.data(), values.size() * sizeof(float));
  }
}

inline std::vector<std::vector<float>> gradient_values(Transformer& model) {
  std::vector<std::vector<float>> values;
  for (const Tensor& grad : model.trainable_gradients()) values.push_back(grad.to_host_f32());
  return values;
}

}  // namespace oomlab::model::testing
