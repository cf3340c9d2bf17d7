// The val_blowup story on a real GPU (small scale): broken runs out of memory in validation,
// both fixes fit, cuda makes the allocator events dry predicts, and the fixes' outputs match an
// unbounded run (cuda's conv reduces in a fixed order per output element, whatever the batch).
#include <gtest/gtest.h>

#include "harness/memory/budget.hpp"
#include "harness/runner/run_context.hpp"
#include "harness/testing/require_gpu.hpp"
#include "harness/testing/run_scenario.hpp"
#include "kernels/testing/compare.hpp"
#include "scenarios/val_blowup/val_blowup.hpp"

namespace oomlab {
namespace {

using testing::run_scenario;

TEST(ValBlowupGpu, BrokenOomsAndFixesFitOnCuda) {
  OOMLAB_REQUIRE_GPU();
  const auto broken = run_scenario("val_blowup", "broken", DeviceKind::cuda, Scale::small);
  ASSERT_TRUE(testing::ran_out_with(broken, memory::Diagnosis::capacity));
  EXPECT_EQ(broken.oom->largest_tag, memory::Tag::activations);
  for (const char* variant : {"fixed-inference", "fixed-chunked"}) {
    EXPECT_FALSE(run_scenario("val_blowup", variant, DeviceKind::cuda, Scale::small).oom.has_value()) << variant;
  }
}

TEST(ValBlowupGpu, FixedOutputsMatchAnUnboundedRun) {
  OOMLAB_REQUIRE_GPU();
  auto run = [](const std::string& variant, std::size_t budget) {
    memory::AllocatorConfig config;
    if (budget != 0) config.budget = budget;
    Device device(DeviceKind::cuda, config);
    RunContext context(device, Scale::small, 2);
    return scenarios::run_val_blowup(variant, context);
  };
  const std::size_t budget =
      memory::parse_budget(ScenarioRegistry::instance().find("val_blowup")->budget(Scale::small)).bytes;
  const auto unbounded = run("broken", 0);
  ASSERT_FALSE(unbounded.validation_outputs.empty());
  for (const char* variant : {"fixed-inference", "fixed-chunked"}) {
    const auto fixed = run(variant, budget);
    EXPECT_TRUE(oomlab::testing::all_close(fixed.validation_outputs, unbounded.validation_outputs,
                                           oomlab::testing::tolerance_for(DType::f32), variant));
  }
}

}  // namespace
}  // namespace oomlab
