#include "scenarios/common/training_scenario.hpp"

#include "harness/runner/run_context.hpp"
#include "scenarios/common/training_knobs.hpp"
#include "scenarios/models/transformer/nccl_group.hpp"

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
  if (ranks <= 1 || device != DeviceKind::cuda) return;  // one rank runs without NCCL too
  const std::string gpus = "gpus=" + std::to_string(ranks);
  const std::string nccl = model::nccl_unavailable_reason();
  if (!nccl.empty()) {
    throw NotOnThisDevice(gpus + " runs one process per GPU with NCCL: " + nccl +
                          "; simulate the ranks with --device dry (or host)");
  }
  const int present = cuda_device_count();
  if (present < ranks) {
    throw NotOnThisDevice(gpus + " needs " + std::to_string(ranks) + " GPUs (one process each) and this machine has " +
                          std::to_string(present) +
                          ": simulate the ranks with --device dry (or host), or set gpus to " + "at most " +
                          std::to_string(present));
  }
}

void TrainingScenario::run(const std::string& variant, RunContext& context) const {
  run_training(with_training_knobs(plan(variant, context.scale()), knobs_of(variant, context)), context);
}

}  // namespace oomlab::scenarios
