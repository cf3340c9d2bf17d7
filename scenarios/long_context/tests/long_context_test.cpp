// The long_context story on host (tiny) and dry (every scale): naive attention runs out of
// memory with activations the largest tag; the fused kernel fits; host and dry agree.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness/memory/tags.hpp"
#include "harness/testing/run_scenario.hpp"
#include "scenarios/gpt_train/tests/oom_story_checks.hpp"
#include "scenarios/long_context/long_context.hpp"

namespace oomlab {
namespace {

using memory::Tag;
using testing::run_scenario;

using testing::expect_activations_named;
using Case = testing::StoryCase;


class LongContextStory : public ::testing::TestWithParam<Case> {};

TEST_P(LongContextStory, NaiveAttentionRunsOutOfMemoryWithActivationsNamed) {
  const auto [device, scale] = GetParam();
  const auto outcome = run_scenario("long_context", "broken", device, scale);
  ASSERT_TRUE(outcome.oom.has_value());
  expect_activations_named(*outcome.oom, scale);
}

TEST_P(LongContextStory, FusedAttentionFits) {
  const auto [device, scale] = GetParam();
  const auto outcome = run_scenario("long_context", "fixed", device, scale);
  EXPECT_FALSE(outcome.oom.has_value());
  EXPECT_EQ(outcome.stats.num_ooms, 0u);
}

// Host tiny runs in LongContextOnHost below.
INSTANTIATE_TEST_SUITE_P(Dry, LongContextStory,
                         ::testing::Values(Case{DeviceKind::dry, Scale::tiny},
                                           Case{DeviceKind::dry, Scale::small},
                                           Case{DeviceKind::dry, Scale::full}),
                         testing::story_case_name);

TEST(LongContextPlans, FullScaleIsGpt2At4096TokensBatch4) {
  const auto plan = scenarios::long_context_plan("fixed", Scale::full);
  EXPECT_EQ(plan.seq, 4096);
  EXPECT_EQ(plan.micro_batch, 4);
  EXPECT_EQ(plan.config.max_seq, 4096);
  EXPECT_EQ(plan.config.channels, 768);
  EXPECT_THROW(scenarios::long_context_plan("flash", Scale::full), std::invalid_argument);
}

TEST(LongContextOnHost, OutcomesMatchDryEventForEvent) {
  for (const char* variant : {"broken", "fixed"}) {
    const auto host = run_scenario("long_context", variant, DeviceKind::host, Scale::tiny);
    const auto dry = run_scenario("long_context", variant, DeviceKind::dry, Scale::tiny);
    EXPECT_EQ(host.oom.has_value(), std::string(variant) == "broken") << variant;
    ASSERT_EQ(host.events.size(), dry.events.size()) << variant;
    for (std::size_t i = 0; i < host.events.size(); ++i) {
      ASSERT_TRUE(host.events[i].same_as(dry.events[i])) << variant << " event " << i;
    }
  }
}

// --set model= takes a Hugging Face config: GPT-2's config.json plans exactly as the preset (its
// position table grown to T = 4096 alike), recorded with its architecture; and a grouped-query
// model's naive attention still keeps (B, H, T, T) per layer: H query heads, whatever Hkv is.
TEST(LongContextModels, AConfigPathPlansAsItsPresetAndNaiveScoresCountQueryHeads) {
  const std::filesystem::path gpt2 = std::filesystem::path(OOMLAB_TRANSFORMER_TEST_CONFIGS) / "gpt2";
  const auto full = [](const char* variant, const std::string& set) {
    return run_variant_in_process(testing::quiet_request("long_context", variant, DeviceKind::dry, Scale::full,
                                                         "unlimited", parse_knob_settings(set)));
  };
  const RunRecord by_path = full("fixed", "model=" + gpt2.string());
  const RunRecord by_name = full("fixed", "model=gpt2-124m");
  EXPECT_EQ(by_path.knobs.at("model"), (gpt2 / "config.json").string() + "#GPT2LMHeadModel");
  EXPECT_EQ(by_path.memory.peak_allocated, by_name.memory.peak_allocated);
  EXPECT_EQ(by_path.memory.per_tag_peak, by_name.memory.per_tag_peak);
  const RunRecord naive = full("broken", "model=mistral-7b,batch=1");
  const RunRecord fused = full("fixed", "model=mistral-7b,batch=1");
  ASSERT_EQ(fused.outcome.status, OutcomeStatus::ok) << fused.outcome.message;
  // 32 layers x 32 query heads x 4096^2 f32 probabilities: 64 GiB more, not 16 (8 KV heads).
  EXPECT_GT(naive.memory.peak_allocated - fused.memory.peak_allocated, std::uint64_t{60} << 30);
}

}  // namespace
}  // namespace oomlab
