// The long_context story on host (tiny) and dry (every scale): naive attention runs out of
// memory with activations the largest tag; the fused kernel fits; host and dry agree.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace oomlab
