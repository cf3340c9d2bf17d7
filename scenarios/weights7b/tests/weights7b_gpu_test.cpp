// weights7b on a GPU at small scale: the streamed loads agree bit for bit with the whole-file
// load, int8 stays in bound, and the cuda allocator peak equals the dry prediction exactly.
#include <gtest/gtest.h>

#include "harness/testing/require_gpu.hpp"
#include "scenarios/weights7b/tests/weights7b_test_support.hpp"
#include "scenarios/weights7b/weights7b.hpp"

namespace oomlab::scenarios {
namespace {

using testing::run_weights7b;

// These tests use the default checkpoint cache (<tmp>/oomlab-weights7b or $OOMLAB_WEIGHTS7B_DIR),
// so the small checkpoints (~470 MB f32, ~235 MB bf16) are generated once, not per test.

std::string small_budget() { return Weights7bScenario().budget(Scale::small); }

TEST(Weights7bGpu, StoryBudgetOutcomesAtSmallScale) {
  OOMLAB_REQUIRE_GPU();
  for (const VariantSpec& spec : Weights7bScenario().variants()) {
    const auto run = run_weights7b(spec.name, DeviceKind::cuda, Scale::small, small_budget());
    EXPECT_EQ(run.oom.has_value(), spec.expected == Expect::oom) << spec.name;
  }
}

TEST(Weights7bGpu, StreamedLoadsMatchTheWholeFileLoadBitForBit) {
  OOMLAB_REQUIRE_GPU();
  const auto broken = run_weights7b("broken", DeviceKind::cuda, Scale::small, "8GiB");
  const auto fixed = run_weights7b("fixed", DeviceKind::cuda, Scale::small, small_budget());
  const auto from_bf16 = run_weights7b("fixed-bf16-file", DeviceKind::cuda, Scale::small, small_budget());
  ASSERT_FALSE(broken.oom || fixed.oom || from_bf16.oom);
  EXPECT_EQ(broken.metrics.at("weights_digest52"), fixed.metrics.at("weights_digest52"));
  EXPECT_EQ(from_bf16.metrics.at("weights_digest52"), fixed.metrics.at("weights_digest52"));
}

TEST(Weights7bGpu, Int8ErrorStaysWithinItsBound) {
  OOMLAB_REQUIRE_GPU();
  const auto run = run_weights7b("fixed-int8", DeviceKind::cuda, Scale::small, small_budget());
  ASSERT_FALSE(run.oom);
  EXPECT_LE(run.metrics.at("int8_error_over_bound"), 1.0);
}

TEST(Weights7bGpu, CudaAllocatorPeakEqualsTheDryPrediction) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"fixed", "fixed-int8", "fixed-bf16-file"}) {
    const auto cuda = run_weights7b(variant, DeviceKind::cuda, Scale::small, small_budget());
    const auto dry = run_weights7b(variant, DeviceKind::dry, Scale::small, small_budget());
    EXPECT_EQ(cuda.stats.allocated.peak, dry.stats.allocated.peak) << variant;
    EXPECT_EQ(cuda.stats.reserved.peak, dry.stats.reserved.peak) << variant;
  }
}

}  // namespace
}  // namespace oomlab::scenarios
