#include "scenarios/gpt_train/training_loop.hpp"

#include <cmath>
#include <cstdio>

#include "harness/memory/size.hpp"
#include "harness/memory/tags.hpp"
#include "kernels/testing/random_fill.hpp"
#include "scenarios/models/transformer/activation_tensors.hpp"
#include "scenarios/models/transformer/trainer.hpp"
#include "scenarios/models/transformer/transformer.hpp"

namespace oomlab::scenarios {
namespace {

// Seeded random tokens; the targets are the tokens shifted by one, as in language modelling.
model::MicroBatch token_batch(Device& device, const TrainingPlan& plan, std::uint32_t seed) {
  memory::TagScope tag(memory::Tag::data);
  const std::size_t n = static_cast<std::size_t>(plan.micro_batch * (plan.seq + 1));
  const std::vector<float> stream = testing::random_indices(n, plan.config.vocab, seed);
  std::vector<float> tokens, targets;
  tokens.reserve(n);
  targets.reserve(n);
  for (std::int64_t b = 0; b < plan.micro_batch; ++b) {
    const auto row = static_cast<std::size_t>(b * (plan.seq + 1));
    tokens.insert(tokens.end(), stream.begin() + row, stream.begin() + row + plan.seq);
    targets.insert(targets.end(), stream.begin() + row + 1, stream.begin() + row + 1 + plan.seq);
  }
  const Shape shape{plan.micro_batch, plan.seq};
  return {Tensor::from_host(device, shape, DType::i32, tokens),
          Tensor::from_host(device, shape, DType::i32, targets)};
}

}  // namespace

void run_training(const TrainingPlan& plan, RunContext& context) {
  Device& device = context.device();
  const auto log = [&](const std::string& line) { context.note(line); };
  context.note(model::describe_memory_plan(plan.config, plan.options, plan.micro_batch, plan.seq));
  context.set_metric("planned_activation_bytes",
                     static_cast<double>(model::block_activation_bytes(plan.config, plan.options,
                                                                       plan.micro_batch, plan.seq) *
                                             (plan.options.checkpointing ? 1 : plan.config.layers) +
                                         model::outer_activation_bytes(plan.config, plan.options,
                                                                       plan.micro_batch, plan.seq)));
  model::Transformer transformer(device, plan.config, plan.options, 1234, log);
  model::Trainer trainer(transformer, log);
  context.set_metric("optimizer_device_bytes", static_cast<double>(trainer.device_state_bytes()));
  context.set_metric("optimizer_host_bytes", static_cast<double>(trainer.host_state_bytes()));

  // The same micro-batches every step: the loss must fall as the model memorises them.
  std::vector<model::MicroBatch> batches;
  for (int i = 0; i < plan.micro_batches; ++i) {
    batches.push_back(token_batch(device, plan, 100 + static_cast<std::uint32_t>(i)));
  }
  const double tokens_per_step = static_cast<double>(plan.micro_batch * plan.seq * plan.micro_batches);
  int skipped = 0;
  context.set_warmup_steps(1);  // step 0 loads the kernels and tunes cuBLASLt: out of the steady rate
  for (int step = 0; step < context.steps(); ++step) {
    context.begin_step(step);
    const model::StepReport report = trainer.step(batches, step == plan.overflow_step);
    context.end_step();
    context.add_work(tokens_per_step, "tokens/s");
    if (!report.applied) {
      ++skipped;
      context.note("step " + std::to_string(step) + ": gradients overflowed at loss scale " +
                   std::to_string(report.loss_scale) + "; step skipped, scale halved");
    }
    if (!device.is_dry()) {
      if (step == 0) context.set_metric("first_loss", report.loss);
      context.set_metric("last_loss", report.loss);
    }
  }
  context.set_metric("skipped_steps", skipped);
  if (plan.options.offload_optimizer) {
    const auto bytes = static_cast<double>(trainer.offload_bytes_per_step());
    context.set_metric("offload_bytes_per_step", bytes);
    if (const auto link = trainer.measure_offload_link()) {  // cuda: the physical limit of this variant
      context.set_metric("link_h2d_bytes_per_s", link->h2d);
      context.set_metric("link_d2h_bytes_per_s", link->d2h);
      context.set_metric("link_both_bytes_per_s", link->both);
      context.set_metric("offload_transfer_floor_s", bytes / link->both);
      char line[320];
      std::snprintf(line, sizeof line,
                    "offload: each step moves %s of optimizer state (in and out); the pinned link measured "
                    "now: %.1f GB/s in, %.1f GB/s out, %.1f GB/s both at once, so the transfers alone take "
                    "at least %.2f s per step",
                    format_size(trainer.offload_bytes_per_step()).c_str(), link->h2d / 1e9, link->d2h / 1e9,
                    link->both / 1e9, bytes / link->both);
      context.note(line);
    }
  }
  context.set_metric("final_loss_scale", trainer.scaler().scale);
}

}  // namespace oomlab::scenarios
