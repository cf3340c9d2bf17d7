// The base of the transformer training scenarios (gpt_train, long_context, train7b): each says
// what plan a variant runs at a scale; the knobs, their checks and the run are the same for all.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "harness/runner/scenario.hpp"
#include "scenarios/common/training_loop.hpp"

namespace oomlab::scenarios {

class TrainingScenario : public DeclaredScenario {
 public:
  using DeclaredScenario::DeclaredScenario;
  std::vector<KnobSpec> knobs() const final;
  std::map<std::string, std::string> variant_knobs(const std::string& variant, Scale scale) const final;
  void check_knobs(const std::string& variant, Scale scale, const KnobValues& knobs) const final;
  // Sharded over more than one GPU: only dry and host simulate the ranks in one process.
  void check_device(const std::string& variant, Scale scale, DeviceKind device, const KnobValues& knobs) const final;
  void run(const std::string& variant, RunContext& context) const final;

 protected:
  // The variant's plan at a scale before any knob; throws std::invalid_argument for an unknown one.
  virtual TrainingPlan plan(const std::string& variant, Scale scale) const = 0;
};

}  // namespace oomlab::scenarios
