// The knobs of the transformer training scenarios (gpt_train, long_context): the questions a
// user brings ("GPT-2 350M at batch 24 in bf16, with checkpointing?"). A variant's plan gives
// the defaults; the knobs overwrite the plan's fields.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "harness/runner/knobs.hpp"
#include "scenarios/common/training_loop.hpp"

namespace oomlab::scenarios {

std::vector<KnobSpec> training_knob_specs();
// The plan's settings as knob values.
std::map<std::string, std::string> training_knob_values(const TrainingPlan& plan);
// `plan` with the knob values applied. Throws std::invalid_argument for a combination that has
// no meaning (a batch that micro_batches does not divide).
TrainingPlan with_training_knobs(TrainingPlan plan, const KnobValues& knobs);

}  // namespace oomlab::scenarios
