// Scenario `serve7b`: the decision tree's inference branch. A seeded stream of requests is served
// to completion by a LLaMA-style model; what fills the card is the KV cache, not the weights
// (2 x layers x kv_heads x head_dim x dtype bytes per token: 512 KiB for LLaMA-7B in bf16).
// The broken variants are how servers run out: f32 weights, a static batch padded to its longest
// request, a cache grown by concatenation. The fixes: bf16 weights, shorter inputs (the answers
// change), a block-paged cache with continuous batching and preemption, an int8 cache. Every
// other variant makes the same greedy tokens for the same requests: a fix changes memory, not
// answers. Steps = requests served.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "harness/runner/scenario.hpp"

namespace oomlab::scenarios {

class Serve7bScenario final : public DeclaredScenario {
 public:
  Serve7bScenario();
  std::vector<KnobSpec> knobs() const override;
  std::map<std::string, std::string> variant_knobs(const std::string& variant, Scale scale) const override;
  void check_knobs(const std::string& variant, Scale scale, const KnobValues& knobs) const override;
  void check_device(const std::string& variant, Scale scale, DeviceKind device, const KnobValues& knobs) const override;
  void run(const std::string& variant, RunContext& context) const override;
};

}  // namespace oomlab::scenarios
