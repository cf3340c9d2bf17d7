// The training loop the transformer scenarios share: build the model and optimizer from a plan,
// log the memory plan, run the steps on seeded token batches, report tokens/s and metrics.
#pragma once
#include <cstdint>

#include "harness/runner/run_context.hpp"
#include "scenarios/models/transformer/transformer_config.hpp"

namespace oomlab::scenarios {

struct TrainingPlan {
  model::TransformerConfig config;
  model::TrainOptions options;
  std::int64_t seq = 0;            // T
  std::int64_t micro_batch = 0;    // B of one forward/backward
  int micro_batches = 1;           // per optimizer step (gradient accumulation when > 1)
  int overflow_step = -1;          // f16: the step whose gradients overflow (injected), or -1
};

// Runs context.steps() optimizer steps. Metrics: first_loss/last_loss (not on dry),
// skipped_steps, final_loss_scale, optimizer_device_bytes, optimizer_host_bytes,
// planned_activation_bytes. An OomError propagates (the `oom` outcome).
void run_training(const TrainingPlan& plan, RunContext& context);

}  // namespace oomlab::scenarios
