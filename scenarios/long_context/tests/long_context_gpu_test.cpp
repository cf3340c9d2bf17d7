// long_context on a GPU at small scale: naive attention runs out of memory, fused fits, and the
// cuda allocator makes exactly the requests dry predicts.
#include <gtest/gtest.h>

#include "harness/testing/require_gpu.hpp"
#include "harness/testing/run_scenario.hpp"

namespace oomlab {
namespace {

using testing::run_scenario;

TEST(LongContextGpu, SmallScaleOutcomesAndPeaksEqualDry) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"broken", "fixed"}) {
    const auto cuda = run_scenario("long_context", variant, DeviceKind::cuda, Scale::small);
    const auto dry = run_scenario("long_context", variant, DeviceKind::dry, Scale::small);
    EXPECT_EQ(cuda.oom.has_value(), std::string(variant) == "broken") << variant;
    EXPECT_EQ(cuda.stats.allocated.peak, dry.stats.allocated.peak) << variant;
    ASSERT_EQ(cuda.events.size(), dry.events.size()) << variant;
    for (std::size_t i = 0; i < cuda.events.size(); ++i) {
      ASSERT_TRUE(cuda.events[i].same_as(dry.events[i])) << variant << " event " << i;
    }
  }
}

}  // namespace
}  // namespace oomlab
