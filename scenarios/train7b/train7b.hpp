// Scenario `train7b`: a LLaMA-style 7B model's full training state against the cards people have
// (issue 21). The parameters are 6.74e9; AdamW keeps two f32 moments per parameter, so what a
// training step holds is counted in bytes per parameter, and the ladder of remedies lowers it:
//   broken      f32 weights, f32 grads, f32 moments: 16 B/param (~108 GB): OOM on h100-80g
//   bf16-mixed  bf16 weights and grads, f32 master and moments: 16 B/param again, OOM on h100-80g
//               (mixed precision shrinks activations, not the optimizer)
//   8bit-adam   bf16 weights and grads, f32 master, AdamW moments a byte each (block-wise, with
//               an f32 absmax per 2048): 10 B/param, fits h100-80g
//   offload     bf16 weights and grads on the GPU, f32 master and moments in pinned host memory,
//               the AdamW step on the CPU: 4 B/param, fits a100-40g
// Every rung recomputes activations (checkpointing), so the optimizer is the story. The issue's
// further rungs (LoRA, int8 base + LoRA) are not built yet.
#pragma once
#include <string>
#include <vector>

#include "scenarios/common/training_scenario.hpp"

namespace oomlab::scenarios {

TrainingPlan train7b_plan(const std::string& variant, Scale scale);

class Train7bScenario final : public TrainingScenario {
 public:
  Train7bScenario();

 protected:
  TrainingPlan plan(const std::string& variant, Scale scale) const override { return train7b_plan(variant, scale); }
};

}  // namespace oomlab::scenarios
