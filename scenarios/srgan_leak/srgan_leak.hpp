// Scenario `srgan_leak`: the seed's case study. An SR-GAN trains for epochs; to report epoch
// statistics of the discriminator's features, every iteration appends the feature maps of the
// real batch (device tensors) to a list. Nothing ever frees them, so allocated memory grows by
// the feature bytes every iteration until the card runs out in the second epoch. The fix computes
// the statistic (each layer's mean) at once, keeps host scalars and drops the features.
// The leak detector watches both: `broken` is a leak within the first epoch, `fixed` is flat.
#pragma once
#include <array>
#include <map>
#include <string>
#include <vector>

#include "harness/leak/growth_fit.hpp"
#include "harness/runner/scenario.hpp"
#include "scenarios/models/srgan/srgan_config.hpp"
#include "scenarios/models/srgan/trainer.hpp"

namespace oomlab::scenarios {

// Every dimension of the story at one scale.
struct SrganLeakPlan {
  srgan::SrganConfig model;
  int batch_size = 0;
  int low_res_size = 0;             // high-resolution side is 4x
  int iterations_per_epoch = 0;
  int epochs = 0;
  leak::GrowthCriteria detector;    // the leak detector's window at this scale
};

SrganLeakPlan srgan_leak_plan(Scale scale);
// `plan` with the run's knob values (batch, lr_size, dtype) where set.
SrganLeakPlan srgan_leak_plan_with(SrganLeakPlan plan, const KnobValues& knobs);

// What a run produced besides the record, for tests: the losses of every iteration and, per
// finished epoch, each discriminator layer's mean activation over the epoch so far.
struct SrganLeakHistory {
  std::vector<srgan::SrganLosses> losses;
  std::vector<std::array<float, srgan::kDiscriminatorLayers>> epoch_layer_means;
  std::size_t retained_bytes_per_iteration = 0;  // feature bytes of one real batch
};

// Runs `variant` on the context's device. Throws OomError (diagnosis leak once the detector has
// seen the growth); fills `history` as it goes, so it is complete up to an OOM.
// `knobs` (batch, lr_size, dtype) default to the variant's own values.
void train_srgan_leak(const std::string& variant, RunContext& context, SrganLeakHistory* history = nullptr,
                      const KnobValues& knobs = {});

class SrganLeakScenario final : public DeclaredScenario {
 public:
  SrganLeakScenario();
  std::vector<KnobSpec> knobs() const override;
  std::map<std::string, std::string> variant_knobs(const std::string& variant, Scale scale) const override;
  void run(const std::string& variant, RunContext& context) const override;
};

}  // namespace oomlab::scenarios
