// train7b on a GPU: at small scale every rung's outcome and every allocator request equal dry's;
// at full scale (the real 7B shapes, two steps, the H200's budget) the fitting rungs' cuda
// allocator peaks equal dry's to the byte, and every one of them trains (a finite loss).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "harness/runner/runner.hpp"
#include "harness/testing/require_gpu.hpp"
#include "harness/testing/run_scenario.hpp"
#include "scenarios/models/transformer/nccl_group.hpp"

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

RunRecord run_train7b(const std::string& variant, DeviceKind device, Scale scale, KnobSettings set, bool profile) {
  RunRequest request;
  request.scenario = "train7b";
  request.variant = variant;
  request.device = device;
  request.scale = scale;
  request.budget = scale == Scale::full ? "h200" : "";
  request.set = std::move(set);
  request.progress = false;
  request.quiet = true;
  request.plan_need = false;
  request.profile = profile;
  return run_variant_in_process(request);
}

// Sharded over one GPU, a world of one through NCCL (issue 22): the collectives run (all-gather,
// reduce-scatter, all-reduce of the norm) on oomlab's buffers, the allocator's peaks equal dry's
// to the byte, and it trains as bf16-mixed does on the same batch.
TEST(Train7bGpu, ShardedOverOneGpuThroughNcclPeaksEqualDryAndTrainsAsBf16Mixed) {
  OOMLAB_REQUIRE_GPU();
  if (!model::nccl_unavailable_reason().empty()) GTEST_SKIP() << model::nccl_unavailable_reason();
  const Scenario& scenario = *ScenarioRegistry::instance().find("train7b");
  for (Scale scale : {Scale::small, Scale::full}) {
    const std::string batch = scenario.variant_knobs("bf16-mixed", scale).at("batch");
    const KnobSettings one_gpu{{"gpus", "1"}, {"batch", batch}};
    const RunRecord cuda = run_train7b("sharded", DeviceKind::cuda, scale, one_gpu, true);
    const RunRecord dry = run_train7b("sharded", DeviceKind::dry, scale, one_gpu, false);
    const std::string name = scale_name(scale);
    ASSERT_EQ(cuda.outcome.status, OutcomeStatus::ok) << name << ": " << cuda.outcome.message;
    EXPECT_EQ(cuda.memory.peak_allocated, dry.memory.peak_allocated) << name;
    EXPECT_EQ(cuda.memory.peak_reserved, dry.memory.peak_reserved) << name;
    EXPECT_GT(cuda.metrics.at("profile_ms.all_gather"), 0) << name;
    EXPECT_GT(cuda.metrics.at("profile_ms.reduce_scatter"), 0) << name;
    EXPECT_GE(cuda.metrics.at("nccl_external_bytes"), 0) << name;
    if (scale == Scale::small) {
      const RunRecord whole = run_train7b("bf16-mixed", DeviceKind::cuda, scale, {}, false);
      EXPECT_EQ(cuda.metrics.at("first_loss"), whole.metrics.at("first_loss"));
      EXPECT_NEAR(cuda.metrics.at("last_loss"), whole.metrics.at("last_loss"), 1e-3 * whole.metrics.at("last_loss"));
    }
  }
}

}  // namespace
}  // namespace oomlab
