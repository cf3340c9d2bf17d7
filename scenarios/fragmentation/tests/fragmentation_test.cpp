// The fragmentation story on host and dry: broken fails with a fragmentation diagnosis although
// the bytes are free; each fix fits; host and dry make the same allocator events.
#include <gtest/gtest.h>

#include "harness/memory/tags.hpp"
#include "harness/testing/run_scenario.hpp"
#include "harness/testing/story_cases.hpp"
#include "scenarios/fragmentation/fragmentation.hpp"

namespace oomlab {
namespace {

using testing::run_scenario;

using Case = testing::StoryCase;

class FragmentationStory : public ::testing::TestWithParam<Case> {};

TEST_P(FragmentationStory, BrokenOomsWithFragmentationAlthoughTheBytesAreFree) {
  const auto [device, scale] = GetParam();
  const auto plan = scenarios::fragmentation_plan(scale, 8);
  const auto outcome = run_scenario("fragmentation", "broken", device, scale);
  ASSERT_TRUE(outcome.oom.has_value()) << "broken must run out of memory";
  const memory::OomInfo& oom = *outcome.oom;
  EXPECT_EQ(oom.diagnosis, memory::Diagnosis::fragmentation);
  EXPECT_EQ(oom.requested, plan.checkpoint_buffer);
  EXPECT_EQ(oom.tag, memory::Tag::weights);
  // The story: reserved-but-unallocated exceeds the request, and so does the budget's headroom.
  EXPECT_GT(oom.reserved - oom.allocated, oom.requested);
  EXPECT_LE(oom.allocated + oom.requested, oom.budget);
  EXPECT_LT(oom.largest_free_block, oom.requested);
}

TEST_P(FragmentationStory, EveryFixFits) {
  const auto [device, scale] = GetParam();
  testing::expect_variants_fit("fragmentation", {"fixed-max-split", "fixed-expandable", "fixed-empty-cache"}, device,
                               scale);
}

// PYTORCH_NO_CUDA_MEMORY_CACHING's debugging mode: nothing is cached, so the device holds
// exactly what is allocated at every moment, and the checkpoint fits.
TEST_P(FragmentationStory, DebugNoCachingFitsWithReservedEqualToAllocatedThroughout) {
  const auto [device, scale] = GetParam();
  const auto outcome = run_scenario("fragmentation", "debug-no-caching", device, scale);
  EXPECT_FALSE(outcome.oom.has_value());
  EXPECT_EQ(outcome.stats.reserved.peak, outcome.stats.allocated.peak);
  EXPECT_EQ(outcome.stats.reserved.current, outcome.stats.allocated.current);
  for (const memory::TraceEvent& event : outcome.events) {
    if (event.kind == memory::EventKind::alloc) {
      EXPECT_EQ(event.reserved_after, event.allocated_after);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HostAndDry, FragmentationStory, ::testing::ValuesIn(testing::host_tiny_and_dry_cases()),
                         testing::StoryCaseName());

TEST(FragmentationSequence, HostAndDryMakeIdenticalAllocatorEvents) {
  for (const char* variant :
       {"broken", "fixed-max-split", "fixed-expandable", "fixed-empty-cache", "debug-no-caching"}) {
    const auto host = run_scenario("fragmentation", variant, DeviceKind::host, Scale::tiny);
    const auto dry = run_scenario("fragmentation", variant, DeviceKind::dry, Scale::tiny);
    ASSERT_EQ(host.events.size(), dry.events.size()) << variant;
    ASSERT_GT(host.events.size(), 10u) << variant;
    for (std::size_t i = 0; i < host.events.size(); ++i) {
      ASSERT_TRUE(host.events[i].same_as(dry.events[i]))
          << variant << ": event " << i << " differs: " << event_kind_name(host.events[i].kind)
          << " vs " << event_kind_name(dry.events[i].kind);
    }
  }
}

TEST(FragmentationCost, EmptyCacheCreatesMoreSegmentsThanBroken) {
  // The price of empty_cache(): training recreates the segments it would have reused.
  const auto fixed = run_scenario("fragmentation", "fixed-empty-cache", DeviceKind::dry, Scale::tiny);
  const auto maxsplit = run_scenario("fragmentation", "fixed-max-split", DeviceKind::dry, Scale::tiny);
  EXPECT_GT(fixed.metrics.at("segments_created"), 1.0);
  EXPECT_GE(fixed.metrics.count("empty_cache_seconds"), 1u);
  EXPECT_GE(maxsplit.metrics.at("segments_created"), fixed.metrics.at("segments_created") - 1);
}

}  // namespace
}  // namespace oomlab
