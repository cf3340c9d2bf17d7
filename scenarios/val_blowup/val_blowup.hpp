// Scenario `val_blowup`: training fits, validation runs out of memory.
//
// The SR-GAN generator trains at batch B (pixel L1, Adam) within the budget. Validation then
// runs at 4B, "to go faster", with the forward the training loop uses:
//   broken           the training forward keeps every activation for a backward that never
//                    comes (PyTorch without torch.no_grad()): 4x the training batch's graph
//                    -> OOM, diagnosis capacity, largest tag `activations`;
//   fixed-inference  the inference forward drops each activation once the next layer has used
//                    it (the `no_grad` of oomlab): the peak is the largest layer's input+output;
//   fixed-chunked    the same training forward, on chunks of B: each chunk's graph is freed
//                    before the next; the outputs are copied into the full validation output.
// All three compute the same outputs (bit-equal on host); only the memory differs.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/runner/scenario.hpp"
#include "scenarios/models/srgan/srgan_config.hpp"

namespace oomlab::scenarios {

struct ValBlowupPlan {
  srgan::SrganConfig model;
  int low_res_size = 0;      // training and validation inputs are square, this size
  int train_batch = 0;       // B
  int validation_batch = 0;  // 4B
  int chunk_batch = 0;       // fixed-chunked's chunk: B, a size the training step fits with
};
ValBlowupPlan val_blowup_plan(Scale scale);
// `plan` with the run's knob values (batch, lr_size, val_batch, dtype) where set; the chunk of
// fixed-chunked stays the training batch.
ValBlowupPlan val_blowup_plan_with(ValBlowupPlan plan, const KnobValues& knobs);

// What one run measured (also the record's metrics).
struct ValBlowupResult {
  std::vector<float> validation_outputs;  // (4B, 4H, 4W, 3) on the host; empty on dry
  float last_train_loss = 0;
  float validation_l1 = 0;
  std::int64_t training_peak_bytes = 0;    // allocated, over the training steps
  std::int64_t validation_peak_bytes = 0;  // allocated, over the validation
};

// Runs `variant` on the context's device; an OomError escapes as the `oom` outcome. The tests
// call it directly to read the outputs (e.g. on a device without a budget).
// `knobs` default to the variant's own values.
ValBlowupResult run_val_blowup(const std::string& variant, RunContext& context, const KnobValues& knobs = {});

class ValBlowupScenario final : public DeclaredScenario {
 public:
  ValBlowupScenario();
  void configure(const std::string& variant, Scale scale,
                 memory::AllocatorConfig& config) const override;
  std::vector<KnobSpec> knobs() const override;
  std::map<std::string, std::string> variant_knobs(const std::string& variant, Scale scale) const override;
  void run(const std::string& variant, RunContext& context) const override;
};

}  // namespace oomlab::scenarios
