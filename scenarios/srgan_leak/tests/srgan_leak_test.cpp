// The SR-GAN leak story on host and dry: broken runs out of memory in the second epoch with
// diagnosis leak, after the detector found +feature bytes/step in `retained` during the first;
// fixed is exactly flat at step boundaries; both train identically.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "harness/memory/tags.hpp"
#include "harness/runner/runner.hpp"
#include "harness/testing/run_scenario.hpp"
#include "harness/testing/story_cases.hpp"
#include "scenarios/srgan_leak/srgan_leak.hpp"

namespace oomlab {
namespace {

using scenarios::srgan_leak_plan;
using testing::run_scenario;

// The four real-batch feature maps' bytes, from the layout (each 4x4 stride-2 conv halves H, W).
std::int64_t expected_feature_bytes(Scale scale) {
  const auto plan = srgan_leak_plan(scale);
  const std::int64_t high_res = 4 * plan.low_res_size;
  std::int64_t bytes = 0;
  for (int l = 0; l < srgan::kDiscriminatorLayers; ++l) {
    const std::int64_t side = high_res >> (l + 1);
    bytes += plan.batch_size * side * side * plan.model.discriminator_channels[l] * 4;  // f32
  }
  return bytes;
}

// The allocated bytes at every step mark (the boundary before each step).
std::vector<std::int64_t> allocated_at_step_marks(const std::vector<memory::TraceEvent>& events) {
  std::vector<std::int64_t> allocated;
  for (const auto& e : events) {
    if (e.kind == memory::EventKind::step) allocated.push_back(e.allocated_after);
  }
  return allocated;
}

using Case = testing::StoryCase;

class SrganLeakStory : public ::testing::TestWithParam<Case> {};

void expect_flat_and_fits(const char* variant, DeviceKind device, Scale scale) {
  const auto plan = srgan_leak_plan(scale);
  const auto outcome = run_scenario("srgan_leak", variant, device, scale);
  EXPECT_FALSE(outcome.oom.has_value());
  EXPECT_EQ(outcome.stats.num_ooms, 0u);
  EXPECT_EQ(outcome.metrics.at("leak_detected"), 0.0);
  EXPECT_EQ(outcome.metrics.at("leak_bytes_per_step"), 0.0);  // exactly
  EXPECT_EQ(outcome.stats.tag(memory::Tag::retained).peak, 0);
  const auto allocated = allocated_at_step_marks(outcome.events);
  ASSERT_EQ(allocated.size(), static_cast<std::size_t>(plan.iterations_per_epoch * plan.epochs));
  for (std::size_t i = 1; i < allocated.size(); ++i) EXPECT_EQ(allocated[i], allocated[0]) << "step " << i;
}

TEST_P(SrganLeakStory, BrokenLeaksFromTheFirstEpochAndRunsOutInTheSecond) {
  const auto [device, scale] = GetParam();
  const auto plan = srgan_leak_plan(scale);
  const int epoch = plan.iterations_per_epoch;
  const auto outcome = run_scenario("srgan_leak", "broken", device, scale);
  ASSERT_TRUE(testing::ran_out_with(outcome, memory::Diagnosis::leak));
  EXPECT_NE(outcome.oom->remedy.find("epoch_stats.append(real_features)"), std::string::npos)
      << outcome.oom->remedy;
  EXPECT_NE(outcome.oom->remedy.find(".item()"), std::string::npos);
  EXPECT_EQ(outcome.oom->largest_tag, memory::Tag::retained);

  const auto& m = outcome.metrics;
  ASSERT_EQ(m.at("leak_detected"), 1.0);
  // bytes/step is exactly the real batch's feature maps, in tag retained, at the named site.
  const double feature_bytes = static_cast<double>(expected_feature_bytes(scale));
  EXPECT_EQ(m.at("leak_bytes_per_step"), feature_bytes);
  EXPECT_EQ(m.at("leak_tag_bytes_per_step"), feature_bytes);
  EXPECT_EQ(m.at("leak_site_bytes_per_step"), feature_bytes);
  EXPECT_EQ(m.at("leak_tag"), static_cast<double>(static_cast<int>(memory::Tag::retained)));
  // Found in the first epoch (before its last step), out of memory in the second.
  EXPECT_LT(m.at("leak_detected_at_step"), epoch - 1);
  std::int64_t oom_step = -1;  // the step the OOM happened in: the last step mark
  for (const auto& e : outcome.events) {
    if (e.kind == memory::EventKind::step) oom_step = e.step;
  }
  EXPECT_GE(oom_step, epoch);
  EXPECT_LT(oom_step, 2 * epoch);
  // The early warning names a step in the second epoch too, within a few steps of the real one
  // (it projects from step 9, and reserved memory grows by whole segments).
  EXPECT_GE(m.at("predicted_oom_step"), epoch);
  EXPECT_LE(std::abs(m.at("predicted_oom_step") - static_cast<double>(oom_step)), 3.0);
  // Memory at the step boundaries grew by exactly the feature bytes every step.
  const auto allocated = allocated_at_step_marks(outcome.events);
  ASSERT_GE(allocated.size(), 3u);
  for (std::size_t i = 1; i < allocated.size(); ++i) {
    EXPECT_EQ(allocated[i] - allocated[i - 1], expected_feature_bytes(scale)) << "step " << i;
  }
}

TEST_P(SrganLeakStory, FixedIsFlatAtStepBoundariesAndFits) {
  const auto [device, scale] = GetParam();
  for (const char* variant : {"fixed", "fixed-bf16"}) {
    SCOPED_TRACE(variant);
    expect_flat_and_fits(variant, device, scale);
  }
}

// bf16 halves what the step allocates on top of the f32 master weights and moments.
TEST_P(SrganLeakStory, Bf16PeaksBelowF32) {
  const auto [device, scale] = GetParam();
  const auto f32 = run_scenario("srgan_leak", "fixed", device, scale);
  const auto bf16 = run_scenario("srgan_leak", "fixed-bf16", device, scale);
  EXPECT_LT(bf16.stats.allocated.peak, f32.stats.allocated.peak);
  EXPECT_LT(bf16.stats.tag(memory::Tag::activations).peak, f32.stats.tag(memory::Tag::activations).peak * 0.6);
}

INSTANTIATE_TEST_SUITE_P(HostAndDry, SrganLeakStory, ::testing::ValuesIn(testing::host_tiny_and_dry_cases()),
                         testing::StoryCaseName());

scenarios::SrganLeakHistory train_unbounded(const std::string& variant) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  const auto plan = srgan_leak_plan(Scale::tiny);
  RunContext context(device, Scale::tiny, plan.iterations_per_epoch * plan.epochs);
  scenarios::SrganLeakHistory history;
  scenarios::train_srgan_leak(variant, context, &history);
  return history;
}

TEST(SrganLeakTraining, BrokenAndFixedTrainIdenticallyStepByStep) {
  // Without a budget broken runs to the end: the leak changes memory, not the numbers.
  const auto broken = train_unbounded("broken");
  const auto fixed = train_unbounded("fixed");
  ASSERT_EQ(broken.losses.size(), 24u);
  ASSERT_EQ(fixed.losses.size(), broken.losses.size());
  for (std::size_t i = 0; i < broken.losses.size(); ++i) {
    EXPECT_TRUE(std::isfinite(broken.losses[i].generator) && broken.losses[i].generator > 0) << i;
    EXPECT_EQ(broken.losses[i].discriminator, fixed.losses[i].discriminator) << "step " << i;
    EXPECT_EQ(broken.losses[i].pixel, fixed.losses[i].pixel) << "step " << i;
    EXPECT_EQ(broken.losses[i].feature_matching, fixed.losses[i].feature_matching) << "step " << i;
    EXPECT_EQ(broken.losses[i].adversarial, fixed.losses[i].adversarial) << "step " << i;
    EXPECT_EQ(broken.losses[i].generator, fixed.losses[i].generator) << "step " << i;
  }
  // And the statistic the list was kept for is the same, computed from host scalars.
  ASSERT_EQ(broken.epoch_layer_means.size(), 2u);
  ASSERT_EQ(fixed.epoch_layer_means.size(), 2u);
  for (std::size_t e = 0; e < 2; ++e) {
    for (int l = 0; l < srgan::kDiscriminatorLayers; ++l) {
      EXPECT_EQ(broken.epoch_layer_means[e][l], fixed.epoch_layer_means[e][l]) << "epoch " << e << " layer " << l;
      EXPECT_NE(fixed.epoch_layer_means[e][l], 0.0f) << "epoch " << e << " layer " << l;
    }
  }
  EXPECT_EQ(static_cast<std::int64_t>(broken.retained_bytes_per_iteration), expected_feature_bytes(Scale::tiny));
}

// bf16 rounds every activation, so the numbers differ from f32, but the same training must
// come out: the first step's losses agree within bf16's precision, and the run stays finite.
TEST(SrganLeakTraining, Bf16TracksF32) {
  const auto f32 = train_unbounded("fixed");
  const auto bf16 = train_unbounded("fixed-bf16");
  ASSERT_EQ(bf16.losses.size(), f32.losses.size());
  for (const auto& losses : bf16.losses) EXPECT_TRUE(std::isfinite(losses.generator) && losses.generator > 0);
  const auto& a = f32.losses.front();
  const auto& b = bf16.losses.front();
  EXPECT_NEAR(b.pixel, a.pixel, 0.02 * a.pixel);
  EXPECT_NEAR(b.discriminator, a.discriminator, 0.02 * a.discriminator);
  EXPECT_NEAR(b.generator, a.generator, 0.02 * a.generator);
}

TEST(SrganLeakSequence, HostAndDryMakeIdenticalAllocatorEvents) {
  for (const char* variant : {"broken", "fixed"}) {
    const auto host = run_scenario("srgan_leak", variant, DeviceKind::host, Scale::tiny);
    const auto dry = run_scenario("srgan_leak", variant, DeviceKind::dry, Scale::tiny);
    ASSERT_EQ(host.events.size(), dry.events.size()) << variant;
    for (std::size_t i = 0; i < host.events.size(); ++i) {
      ASSERT_TRUE(host.events[i].same_as(dry.events[i]))
          << variant << ": event " << i << " differs: " << event_kind_name(host.events[i].kind)
          << " vs " << event_kind_name(dry.events[i].kind);
    }
  }
}

TEST(SrganLeakRecord, TheRunRecordCarriesTheLeakVerdict) {
  RunRequest request;
  request.scenario = "srgan_leak";
  request.variant = "broken";
  request.device = DeviceKind::dry;
  request.scale = Scale::full;
  request.progress = false;
  const RunRecord record = run_variant_in_process(request);
  EXPECT_EQ(record.outcome.status, OutcomeStatus::oom);
  EXPECT_EQ(record.outcome.diagnosis, "leak");
  EXPECT_TRUE(record.matches_expectation);
  EXPECT_EQ(record.metrics.at("leak_bytes_per_step"), static_cast<double>(expected_feature_bytes(Scale::full)));
  EXPECT_EQ(record.metrics.at("leak_bytes_per_step"), 480.0 * 1024 * 1024);  // 256+128+64+32 MiB
  EXPECT_GT(record.metrics.at("predicted_oom_step"), 0.0);
}

// Where the training thread waited, for a GPU run's record: the data path (the step's wait for
// the prefetched batch) and the step's one wait for the device. Host runs have them; dry, which
// renders nothing and waits for nothing, leaves them out.
TEST(SrganLeakRecord, HostWaitsAreMeasuredOffDry) {
  const auto host = run_scenario("srgan_leak", "fixed", DeviceKind::host, Scale::tiny);
  for (const char* metric : {"first_batch_ms", "batch_render_ms", "batch_wait_ms", "batch_wait_ms_max",
                             "step_end_wait_ms"}) {
    ASSERT_EQ(host.metrics.count(metric), 1u) << metric;
    EXPECT_GE(host.metrics.at(metric), 0.0) << metric;
  }
  EXPECT_GT(host.metrics.at("batch_render_ms"), 0.0);
  EXPECT_LE(host.metrics.at("batch_wait_ms"), host.metrics.at("batch_wait_ms_max"));
  const auto dry = run_scenario("srgan_leak", "fixed", DeviceKind::dry, Scale::tiny);
  EXPECT_EQ(dry.metrics.count("batch_wait_ms"), 0u);
  EXPECT_EQ(dry.metrics.count("leak_bytes_per_step"), 1u);
}

TEST(SrganLeakScenario, UnknownVariantIsAClearError) {
  Device device(DeviceKind::dry, memory::AllocatorConfig{});
  RunContext context(device, Scale::tiny, 2);
  EXPECT_THROW(scenarios::train_srgan_leak("leaky", context), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab
