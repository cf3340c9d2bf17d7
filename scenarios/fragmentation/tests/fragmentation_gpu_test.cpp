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
  ASSERT_TRUE(testing::ran_out_with(outcome, memory::Diagnosis::fragmentation));
  EXPECT_GT(outcome.oom->reserved - outcome.oom->allocated, outcome.oom->requested);
}

TEST(FragmentationGpu, FixesFitOnCuda) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"fixed-max-split", "fixed-expandable", "fixed-empty-cache"}) {
    const auto outcome = run_scenario("fragmentation", variant, DeviceKind::cuda, Scale::small);
    EXPECT_FALSE(outcome.oom.has_value()) << variant;
  }
}

}  // namespace
}  // namespace oomlab
