// weights7b on a GPU at small scale: the streamed loads agree bit for bit with the whole-file
// load, int8 stays in bound, the cuda allocator peak equals the dry prediction exactly, and the
// pinned ring's shape changes nothing but speed.
#include <gtest/gtest.h>

#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/testing/require_gpu.hpp"
#include "scenarios/weights7b/checkpoint_cache.hpp"
#include "scenarios/weights7b/tests/sharded_copy.hpp"
#include "scenarios/weights7b/tests/weights7b_test_support.hpp"
#include "scenarios/weights7b/weight_loader.hpp"
#include "scenarios/weights7b/weights7b.hpp"
#include "scenarios/weights7b/weights_check.hpp"

namespace oomlab::scenarios {
namespace {

using testing::run_weights7b;

// These tests use the default checkpoint cache (<tmp>/oomlab-weights7b-<uid> or $OOMLAB_WEIGHTS7B_DIR),
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
  testing::expect_three_loads_agree(DeviceKind::cuda, Scale::small, "8GiB", small_budget());
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

// The pinned ring with real DMA: more slots, or slots so small that every tensor spans several
// and the ring wraps hundreds of times, load the same weights bit for bit and make the same
// device allocations (the host ring is not device memory).
TEST(Weights7bGpu, PinnedRingShapesLoadTheSameWeights) {
  OOMLAB_REQUIRE_GPU();
  using namespace weights7b;
  const Weights7bPlan plan = weights7b_plan(Scale::small);
  const RingShape rings[] = {kDefaultRing, {16 * MiB, 4}, {1 * MiB, 2}};
  for (const DType dtype : {DType::f32, DType::bf16}) {
    const CheckpointSource source = checkpoint_for(DeviceKind::cuda, {plan.preset, dtype}, [](const std::string&) {});
    for (const WeightFormat format : {WeightFormat::bf16, WeightFormat::int8_rowwise}) {
      const std::string label = std::string(dtype_name(dtype)) + (format == WeightFormat::bf16 ? " bf16" : " int8");
      std::uint64_t digest[3] = {};
      std::int64_t peak[3] = {};
      for (int r = 0; r < 3; ++r) {
        memory::AllocatorConfig config;
        config.budget = memory::parse_budget(small_budget()).bytes;
        Device device(DeviceKind::cuda, config);
        LoadStats stats;
        const LoadedWeights weights = stream_load(device, source, format, plan.chunk_bytes, stats, rings[r]);
        digest[r] = weights_digest(weights);
        peak[r] = device.allocator().stats().allocated.peak;
        EXPECT_EQ(stats.host_staging_bytes, rings[r].slot_bytes * rings[r].slots) << label;
        EXPECT_GT(stats.host_copy_seconds, 0.0) << label;
      }
      EXPECT_EQ(digest[0], digest[1]) << label;
      EXPECT_EQ(digest[0], digest[2]) << label;
      EXPECT_EQ(peak[0], peak[1]) << label;  // the host ring is not device memory
      EXPECT_EQ(peak[0], peak[2]) << label;
    }
  }
}

// The small checkpoint split into shards as Hugging Face writes them, named as the user's: every
// load reads it across the files into the same bits, with the same device peak, as from the one
// generated file.
TEST(Weights7bGpu, AShardedCheckpointLoadsTheSameBitsAsTheSingleFile) {
  OOMLAB_REQUIRE_GPU();
  using namespace weights7b;
  const CheckpointSource single = checkpoint_for(DeviceKind::cuda, {weights7b_plan(Scale::small).preset, DType::f32},
                                                 [](const std::string&) {});
  safetensors::testing::TempDir dir;
  testing::ShardingOptions options;
  options.shards = 4;
  const std::string index = testing::write_sharded_copy(single.label(), dir.path().string(), options);
  const std::size_t files = safetensors::read_sharded_index(index).shards.size();
  ASSERT_GE(files, 2u);
  for (const char* variant : {"broken", "fixed", "fixed-int8"}) {
    const std::string budget = std::string(variant) == "broken" ? "8GiB" : small_budget();
    const auto generated = run_weights7b(variant, DeviceKind::cuda, Scale::small, budget);
    testing::GivenCheckpoint given(DType::f32, index);
    const auto sharded = run_weights7b(variant, DeviceKind::cuda, Scale::small, budget);
    ASSERT_FALSE(generated.oom || sharded.oom) << variant;
    EXPECT_EQ(sharded.metrics.at("checkpoint_files"), static_cast<double>(files)) << variant;
    EXPECT_EQ(sharded.stats.allocated.peak, generated.stats.allocated.peak) << variant;
    const char* check = std::string(variant) == "fixed-int8" ? "int8_error_over_bound" : "weights_digest52";
    EXPECT_EQ(sharded.metrics.at(check), generated.metrics.at(check)) << variant;
  }
}

}  // namespace
}  // namespace oomlab::scenarios
