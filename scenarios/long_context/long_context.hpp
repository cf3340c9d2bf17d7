// Scenario `long_context`: GPT-2 124M training at T=4096, batch 4, bf16. Naive attention keeps
// the (B, H, T, T) probabilities of every layer for backward (f32, as autocast runs softmax):
// 3 GiB per layer, 36 GiB in all, past a 40 GB A100. The fused (flash-style) kernel keeps only
// the output and a per-row logsumexp: memory linear in T.
#pragma once
#include <string>
#include <vector>

#include "scenarios/common/training_scenario.hpp"

namespace oomlab::scenarios {

TrainingPlan long_context_plan(const std::string& variant, Scale scale);

class LongContextScenario final : public TrainingScenario {
 public:
  LongContextScenario();

 protected:
  TrainingPlan plan(const std::string& variant, Scale scale) const override {
    return long_context_plan(variant, scale);
  }
};

}  // namespace oomlab::scenarios
