// Scenario `gpt_train`: GPT-2 124M training at T=1024 with AdamW. At batch 32 in f32 the
// activations alone need ~40 GB, so a 24 GiB card runs out of memory in the forward pass. Each
// fixed variant applies one remedy from the standard ladder on the same budget: halve the
// batch, bf16 mixed precision, f16 with dynamic loss scaling, gradient accumulation, activation
// checkpointing, and AdamW state offloaded to host memory.
#pragma once
#include <string>
#include <vector>

#include "scenarios/common/training_scenario.hpp"

namespace oomlab::scenarios {

// The plan a variant runs at a scale (model, precision, attention, batch split, ...).
TrainingPlan gpt_train_plan(const std::string& variant, Scale scale);

class GptTrainScenario final : public TrainingScenario {
 public:
  GptTrainScenario();

 protected:
  TrainingPlan plan(const std::string& variant, Scale scale) const override { return gpt_train_plan(variant, scale); }
};

}  // namespace oomlab::scenarios
