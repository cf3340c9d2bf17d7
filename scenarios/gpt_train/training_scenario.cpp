#include "scenarios/gpt_train/training_scenario.hpp"

#include "harness/runner/run_context.hpp"
#include "scenarios/gpt_train/training_knobs.hpp"

namespace oomlab::scenarios {

std::vector<KnobSpec> TrainingScenario::knobs() const { return training_knob_specs(); }

std::map<std::string, std::string> TrainingScenario::variant_knobs(const std::string& variant, Scale scale) const {
  return training_knob_values(plan(variant, scale));
}

void TrainingScenario::check_knobs(const std::string& variant, Scale scale, const KnobValues& knobs) const {
  with_training_knobs(plan(variant, scale), knobs);
}

void TrainingScenario::check_device(const std::string& variant, Scale scale, DeviceKind device,
                                    const KnobValues& knobs) const {
  const int ranks = with_training_knobs(plan(variant, scale), knobs).options.shard_ranks;
  if (ranks > 1 && device == DeviceKind::cuda) {
    throw NotOnThisDevice("gpus=" + std::to_string(ranks) + " needs " + std::to_string(ranks) +
                          " GPUs, one process each with NCCL, which this build has not yet: simulate the ranks with "
                          "--device dry (or host), or run gpus=1");
  }
}

void TrainingScenario::run(const std::string& variant, RunContext& context) const {
  run_training(with_training_knobs(plan(variant, context.scale()), knobs_of(variant, context)), context);
}

}  // namespace oomlab::scenarios
