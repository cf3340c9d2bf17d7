// Scenario `weights7b`: loading a 7B LLaMA checkpoint (f32 safetensors, 27 GB) onto a 24 GiB card
// to run it in bf16. The broken load reads the whole file, uploads every f32 byte and casts on the
// device: 6 bytes/param at the peak, 40 GB for 6.74 B parameters. The fixed loads stream tensor by
// tensor through a small staging ring: 2 bytes/param (bf16) or ~1 byte/param (int8) plus the ring.
// Knobs (weights7b_knobs.hpp) ask the same of 13B and 70B shapes, bf16 or f16 files, other rings.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "harness/runner/scenario.hpp"
#include "kernels/core/dtype.hpp"

namespace oomlab::scenarios {

namespace weights7b {
inline constexpr const char* kBroken = "broken";
inline constexpr const char* kFixed = "fixed";
inline constexpr const char* kFixedInt8 = "fixed-int8";
inline constexpr const char* kFixedBf16File = "fixed-bf16-file";
}  // namespace weights7b

// What one run loads and how: a scale's defaults, then the knobs (weights7b_knobs.hpp).
struct Weights7bPlan {
  std::string preset;             // llama-tiny / llama-small / llama-7b (or -13b, -70b by --set)
  DType file_dtype = DType::f32;  // the checkpoint file's dtype
  std::size_t chunk_bytes = 0;    // one slot of the device staging ring
  std::string model_chosen_by;    // "--scale full" or "--set model=llama-13b", for messages
};
// The scale's defaults, for an f32 file.
Weights7bPlan weights7b_plan(Scale scale);

class Weights7bScenario final : public DeclaredScenario {
 public:
  Weights7bScenario();
  std::vector<KnobSpec> knobs() const override;
  std::map<std::string, std::string> variant_knobs(const std::string& variant, Scale scale) const override;
  // Refuses meaningless combinations (weights7b_knobs.hpp) and, because only here are the model
  // and dtype known, a checkpoint named in $OOMLAB_WEIGHTS7B_<DTYPE> that is not that model in
  // that dtype (checkpoint_match.hpp): read from its headers, before any run.
  void check_knobs(const std::string& variant, Scale scale, const KnobValues& knobs) const override;
  void run(const std::string& variant, RunContext& context) const override;
};

}  // namespace oomlab::scenarios
