// The fragmentation story on a real GPU (cuda and cuda_vmm sources), at small scale.
#include <gtest/gtest.h>

#include "harness/testing/require_gpu.hpp"
#include "scenarios/fragmentation/fragmentation.hpp"
#include "harness/testing/run_scenario.hpp"

namespace oomlab {
namespace {

using testing::run_scenario;

TEST(FragmentationGpu, BrokenOomsWithFragmentationOnCuda) {
  OOMLAB_REQUIRE_GPU();
  const auto outcome = run_scenario("fragmentation", "broken", DeviceKind::cuda, Scale::small);
  ASSERT_TRUE(outcome.oom.has_value());
  EXPECT_EQ(outcome.oom->diagnosis, memory::Diagnosis::fragmentation);
  EXPECT_GT(outcome.oom->reserved - outcome.oom->allocated, outcome.oom->requested);
}

TEST(FragmentationGpu, FixesFitOnCuda) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"fixed-max-split", "fixed-expandable", "fixed-empty-cache"}) {
    const auto outcome = run_scenario("fragmentation", variant, DeviceKind::cuda, Scale::small);
    EXPECT_FALSE(outcome.oom.has_value()) << variant;
  }
}

TEST(FragmentationGpu, CudaMakesTheSameAllocatorEventsAsDry) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"broken", "fixed-max-split", "fixed-expandable"}) {
    const auto cuda = run_scenario("fragmentation", variant, DeviceKind::cuda, Scale::small);
    const auto dry = run_scenario("fragmentation", variant, DeviceKind::dry, Scale::small);
    ASSERT_EQ(cuda.events.size(), dry.events.size()) << variant;
    for (std::size_t i = 0; i < cuda.events.size(); ++i) {
      ASSERT_TRUE(cuda.events[i].same_as(dry.events[i])) << variant << ": event " << i;
    }
    EXPECT_EQ(cuda.stats.allocated.peak, dry.stats.allocated.peak) << variant;
    EXPECT_EQ(cuda.stats.reserved.peak, dry.stats.reserved.peak) << variant;
  }
}

}  // namespace
}  // namespace oomlab
