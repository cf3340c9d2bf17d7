// Scenario `long_context`: GPT-2 124M training at T=4096, batch 4, bf16. Naive attention keeps
// the (B, H, T, T) probabilities of every layer for backward (f32, as autocast runs softmax):
// 3 GiB per layer, 36 GiB in all, past a 40 GB A100. The fused (flash-style) kernel keeps only
// the output and a per-row logsumexp: memory linear in T.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "harness/runner/scenario.hpp"
#include "scenarios/gpt_train/training_loop.hpp"

namespace oomlab::scenarios {

TrainingPlan long_context_plan(const std::string& variant, Scale scale);

class LongContextScenario final : public Scenario {
 public:
  std::string name() const override { return "long_context"; }
  std::string summary() const override;
  std::vector<VariantSpec> variants() const override;
  std::string budget(Scale scale) const override;
  int default_steps(Scale scale) const override;
  std::vector<KnobSpec> knobs() const override;
  std::map<std::string, std::string> variant_knobs(const std::string& variant, Scale scale) const override;
  void check_knobs(const std::string& variant, Scale scale, const KnobValues& knobs) const override;
  void run(const std::string& variant, RunContext& context) const override;
};

}  // namespace oomlab::scenarios
