// gpt_train on a GPU at small scale: every variant ends as the story says, and the cuda
// allocator makes exactly the requests dry predicts (same events, same peak).
#include <gtest/gtest.h>

#include "harness/testing/require_gpu.hpp"
#include "harness/testing/run_scenario.hpp"

namespace oomlab {
namespace {

using testing::run_scenario;

TEST(GptTrainGpu, SmallScaleOutcomesAndPeaksEqualDry) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"broken", "half-batch", "bf16", "fp16-loss-scaling", "grad-accum",
                              "checkpointing", "cpu-offload"}) {
    const auto cuda = run_scenario("gpt_train", variant, DeviceKind::cuda, Scale::small);
    const auto dry = run_scenario("gpt_train", variant, DeviceKind::dry, Scale::small);
    EXPECT_EQ(cuda.oom.has_value(), std::string(variant) == "broken") << variant;
    EXPECT_EQ(cuda.stats.allocated.peak, dry.stats.allocated.peak) << variant;
    EXPECT_EQ(cuda.stats.reserved.peak, dry.stats.reserved.peak) << variant;
    ASSERT_EQ(cuda.events.size(), dry.events.size()) << variant;
    for (std::size_t i = 0; i < cuda.events.size(); ++i) {
      ASSERT_TRUE(cuda.events[i].same_as(dry.events[i])) << variant << " event " << i;
    }
    if (std::string(variant) == "fp16-loss-scaling") {
      EXPECT_EQ(cuda.metrics.at("skipped_steps"), 1.0);
    } else if (!cuda.oom) {
      EXPECT_LT(cuda.metrics.at("last_loss"), cuda.metrics.at("first_loss")) << variant;
    }
  }
}

}  // namespace
}  // namespace oomlab
