// Scenario `weights7b`: loading a 7B LLaMA checkpoint (f32 safetensors, 27 GB) onto a 24 GiB card
// to run it in bf16. The broken load reads the whole file, uploads every f32 byte and casts on the
// device: 6 bytes/param at the peak, 40 GB for 6.74 B parameters. The fixed loads stream tensor by
// tensor through a small staging ring: 2 bytes/param (bf16) or ~1 byte/param (int8) plus the ring.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "harness/runner/scenario.hpp"

namespace oomlab::scenarios {

// What one scale loads and how.
struct Weights7bPlan {
  std::string preset;            // llama-tiny / llama-small / llama-7b
  std::size_t chunk_bytes = 0;   // one staging slot (host and device)
};
Weights7bPlan weights7b_plan(Scale scale);

class Weights7bScenario final : public Scenario {
 public:
  std::string name() const override { return "weights7b"; }
  std::string summary() const override;
  std::vector<VariantSpec> variants() const override;
  std::string budget(Scale scale) const override;
  int default_steps(Scale scale) const override;
  void run(const std::string& variant, RunContext& context) const override;
};

}  // namespace oomlab::scenarios
