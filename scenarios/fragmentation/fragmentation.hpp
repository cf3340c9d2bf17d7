// Scenario `fragmentation`: an OOM although the memory is there. A training loop first runs
// one big evaluation batch, then trains with smaller batches while keeping one small tensor per
// step (a history of sampled outputs); finally a checkpoint save asks for one large contiguous
// buffer. allocated + request fits the budget, but the free bytes are scattered between the
// kept tensors inside the evaluation batch's old segment.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "harness/runner/scenario.hpp"

namespace oomlab::scenarios {

// Every size of the story, derived from the budget at which it is told.
struct FragmentationPlan {
  std::size_t story_budget = 0;
  std::size_t evaluation_batch = 0;              // phase 1: allocated once, then freed
  std::vector<std::size_t> training_activations; // phase 2: per step, freed at its end
  std::size_t kept_per_step = 0;                 // phase 2: kept until the end (the history)
  int training_steps = 0;
  std::size_t checkpoint_buffer = 0;             // phase 3: the large request
  std::size_t max_split_size = 0;                // what fixed-max-split sets
};

FragmentationPlan fragmentation_plan(Scale scale, int steps);

class FragmentationScenario final : public DeclaredScenario {
 public:
  FragmentationScenario();
  void configure(const std::string& variant, Scale scale,
                 memory::AllocatorConfig& config) const override;
  void run(const std::string& variant, RunContext& context) const override;
};

}  // namespace oomlab::scenarios
