// gpt_train on a GPU at small scale: every variant ends as the story says and trains (that cuda
// makes dry's requests is the contract suite's: scenarios/tests/allocation_contract_gpu_test.cpp).
#include <gtest/gtest.h>

#include "harness/testing/require_gpu.hpp"
#include "harness/testing/run_scenario.hpp"

namespace oomlab {
namespace {

using testing::run_scenario;

TEST(GptTrainGpu, SmallScaleOutcomesAsTheStorySays) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"broken", "half-batch", "bf16", "fp16-loss-scaling", "grad-accum",
                              "checkpointing", "cpu-offload"}) {
    const auto cuda = run_scenario("gpt_train", variant, DeviceKind::cuda, Scale::small);
    EXPECT_EQ(cuda.oom.has_value(), std::string(variant) == "broken") << variant;
    if (std::string(variant) == "fp16-loss-scaling") {
      EXPECT_EQ(cuda.metrics.at("skipped_steps"), 1.0);
    } else if (!cuda.oom) {
      EXPECT_LT(cuda.metrics.at("last_loss"), cuda.metrics.at("first_loss")) << variant;
    }
  }
}

}  // namespace
}  // namespace oomlab
