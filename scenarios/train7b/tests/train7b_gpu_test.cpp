// train7b on a GPU: at small scale every rung's outcome and every allocator request equal dry's;
// at full scale (the real 7B shapes, two steps, the H200's budget) the fitting rungs' cuda
// allocator peaks equal dry's to the byte, and every one of them trains (a finite loss).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "harness/testing/require_gpu.hpp"
#include "harness/testing/run_scenario.hpp"

namespace oomlab {
namespace {

using testing::run_scenario;

TEST(Train7bGpu, SmallScaleOutcomesAndRequestsEqualDry) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"broken", "bf16-mixed", "8bit-adam", "offload", "lora", "int8-lora"}) {
    const auto cuda = run_scenario("train7b", variant, DeviceKind::cuda, Scale::small);
    const auto dry = run_scenario("train7b", variant, DeviceKind::dry, Scale::small);
    EXPECT_EQ(cuda.oom.has_value(), dry.oom.has_value()) << variant;
    EXPECT_EQ(cuda.stats.allocated.peak, dry.stats.allocated.peak) << variant;
    ASSERT_EQ(cuda.events.size(), dry.events.size()) << variant;
    for (std::size_t i = 0; i < cuda.events.size(); ++i) {
      ASSERT_TRUE(cuda.events[i].same_as(dry.events[i])) << variant << " event " << i;
    }
  }
}

TEST(Train7bGpu, FullScalePeaksEqualDryToTheByte) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"bf16-mixed", "8bit-adam", "offload", "lora", "int8-lora"}) {
    const auto cuda = run_scenario("train7b", variant, DeviceKind::cuda, Scale::full, "h200");
    const auto dry = run_scenario("train7b", variant, DeviceKind::dry, Scale::full, "h200");
    ASSERT_FALSE(cuda.oom.has_value()) << variant;
    EXPECT_EQ(cuda.stats.allocated.peak, dry.stats.allocated.peak) << variant;
    EXPECT_EQ(cuda.stats.reserved.peak, dry.stats.reserved.peak) << variant;
    EXPECT_TRUE(std::isfinite(cuda.metrics.at("last_loss"))) << variant;
  }
}

}  // namespace
}  // namespace oomlab
