// The SR-GAN leak on a real GPU at small scale: the same story, the same allocator events as dry.
#include <gtest/gtest.h>

#include "harness/testing/require_gpu.hpp"
#include "harness/testing/run_scenario.hpp"
#include "scenarios/srgan_leak/srgan_leak.hpp"

namespace oomlab {
namespace {

using testing::run_scenario;

TEST(SrganLeakGpu, BrokenOomsWithDiagnosisLeakOnCuda) {
  OOMLAB_REQUIRE_GPU();
  const auto plan = scenarios::srgan_leak_plan(Scale::small);
  const auto outcome = run_scenario("srgan_leak", "broken", DeviceKind::cuda, Scale::small);
  ASSERT_TRUE(testing::ran_out_with(outcome, memory::Diagnosis::leak));
  EXPECT_EQ(outcome.metrics.at("leak_bytes_per_step"), 30.0 * 1024 * 1024);  // 16+8+4+2 MiB
  EXPECT_LT(outcome.metrics.at("leak_detected_at_step"), plan.iterations_per_epoch - 1);
}

TEST(SrganLeakGpu, FixedIsFlatOnCuda) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"fixed", "fixed-bf16"}) {
    const auto outcome = run_scenario("srgan_leak", variant, DeviceKind::cuda, Scale::small);
    EXPECT_FALSE(outcome.oom.has_value()) << variant;
    EXPECT_EQ(outcome.metrics.at("leak_bytes_per_step"), 0.0) << variant;
  }
}

}  // namespace
}  // namespace oomlab
