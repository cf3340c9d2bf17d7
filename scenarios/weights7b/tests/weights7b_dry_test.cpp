// weights7b at full scale on dry: the 7B story's memory, predicted exactly without any file.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness/memory/size.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/weights7b/tests/weights7b_test_support.hpp"
#include "scenarios/weights7b/weights7b.hpp"

namespace oomlab::scenarios {
namespace {

using testing::block_bytes;
using testing::run_weights7b;

const safetensors::LlamaShape& seven_b() { return safetensors::llama_preset("llama-7b"); }

std::size_t layout_bytes(DType dtype) {
  std::size_t total = 0;
  for (const auto& entry : safetensors::llama_layout(seven_b(), dtype)) total += block_bytes(entry.bytes());
  return total;
}

std::size_t budget_bytes(const char* profile) { return memory::parse_budget(profile).bytes; }

TEST(Weights7bDryFull, BrokenRunsOutOfMemoryOnRtx4090WithCapacityNamingWeights) {
  testing::CheckpointDir cache;
  const auto run = run_weights7b("broken", DeviceKind::dry, Scale::full, "rtx4090");
  ASSERT_TRUE(testing::oom_on_weights(run));
  // The request that fails is the whole f32 upload: 4 bytes per parameter, 27 GB.
  EXPECT_GE(run.oom->requested, static_cast<std::size_t>(seven_b().parameters()) * 4);
  EXPECT_EQ(run.oom->site, "load weights › upload the whole file");
  // Nothing was generated or read: the dry plan is shapes only.
  EXPECT_TRUE(std::filesystem::is_empty(cache.dir().path()));
}

TEST(Weights7bDryFull, BrokenPeaksAtSixBytesPerParameter) {
  // On a card that holds it (h100-80g) the broken load completes; its peak is the f32 upload
  // plus every bf16 copy: 6 bytes per parameter, 40.4 GB.
  testing::CheckpointDir cache;
  const auto run = run_weights7b("broken", DeviceKind::dry, Scale::full, "h100-80g");
  ASSERT_FALSE(run.oom.has_value());
  const std::size_t f32_upload = static_cast<std::size_t>(seven_b().parameters()) * 4;
  EXPECT_EQ(static_cast<std::size_t>(run.stats.allocated.peak), block_bytes(f32_upload) + layout_bytes(DType::bf16));
  EXPECT_NEAR(run.metrics.at("peak_bytes_per_parameter"), 6.0, 0.001);
}

TEST(Weights7bDryFull, BrokenOnA100_40gFitsByArithmetic) {
  // The issue expects an OOM on a100-40g too, but 6 bytes/param is 40.43e9 bytes and the
  // profile's budget (40536 MiB card - 529 MiB context) is 41.95e9: it fits with ~1.5 GB to
  // spare, as PyTorch's measured 38.6 GB peak for the same sequence would. Kept as a test so the
  // claim is re-examined if the sequence or the profile changes (see README).
  testing::CheckpointDir cache;
  const auto run = run_weights7b("broken", DeviceKind::dry, Scale::full, "a100-40g");
  EXPECT_FALSE(run.oom.has_value());
  EXPECT_GT(static_cast<std::size_t>(run.stats.reserved.peak), budget_bytes("a100-40g") - 2 * GiB);
}

TEST(Weights7bDryFull, FixedFitsRtx4090WithPeakExactlyBf16WeightsPlusStaging) {
  testing::CheckpointDir cache;
  const auto run = run_weights7b("fixed", DeviceKind::dry, Scale::full, "rtx4090");
  ASSERT_FALSE(run.oom.has_value());
  const std::size_t staging = 2 * weights7b_plan(Scale::full).chunk_bytes;
  EXPECT_EQ(static_cast<std::size_t>(run.stats.allocated.peak), layout_bytes(DType::bf16) + staging);
  EXPECT_EQ(run.metrics.at("device_staging_bytes"), static_cast<double>(staging));
  EXPECT_EQ(static_cast<std::size_t>(run.stats.tag_allocated[static_cast<int>(memory::Tag::weights)].peak),
            layout_bytes(DType::bf16));
  EXPECT_TRUE(std::filesystem::is_empty(cache.dir().path()));
}

TEST(Weights7bDryFull, FixedDoesNotFitAnRtx4060Ti8g) {
  // bf16 7B is 13.5 GB: the 8 GiB card needs the int8 variant.
  testing::CheckpointDir cache;
  const auto run = run_weights7b("fixed", DeviceKind::dry, Scale::full, "rtx4060ti-8g");
  ASSERT_TRUE(testing::oom_on_weights(run));
  // Streamed tensor by tensor, the card fills up in a layer, and the message says which.
  EXPECT_EQ(run.oom->site.rfind("load weights › layer 19 › ", 0), 0u) << run.oom->site;
}

TEST(Weights7bDryFull, FixedInt8FitsRtx4060Ti8gAtAboutOneBytePerParameter) {
  testing::CheckpointDir cache;
  const auto run = run_weights7b("fixed-int8", DeviceKind::dry, Scale::full, "rtx4060ti-8g");
  ASSERT_FALSE(run.oom.has_value());
  std::size_t expected = 2 * weights7b_plan(Scale::full).chunk_bytes;
  for (const auto& entry : safetensors::llama_layout(seven_b(), DType::f32)) {
    if (entry.shape.size() == 2) {
      expected += block_bytes(static_cast<std::size_t>(entry.numel())) + block_bytes(entry.shape[0] * 4);
    } else {
      expected += block_bytes(static_cast<std::size_t>(entry.numel()) * 2);
    }
  }
  EXPECT_EQ(static_cast<std::size_t>(run.stats.allocated.peak), expected);
  EXPECT_NEAR(run.metrics.at("weights_bytes_per_parameter"), 1.0, 0.01);
}

TEST(Weights7bDryFull, Bf16FileStreamsWithNoDeviceStaging) {
  testing::CheckpointDir cache;
  const auto run = run_weights7b("fixed-bf16-file", DeviceKind::dry, Scale::full, "rtx4090");
  ASSERT_FALSE(run.oom.has_value());
  EXPECT_EQ(static_cast<std::size_t>(run.stats.allocated.peak), layout_bytes(DType::bf16));
  EXPECT_EQ(run.metrics.at("device_staging_bytes"), 0.0);
}

TEST(Weights7bDry, StoryBudgetOutcomesMatchTheDeclaredExpectationsAtEveryScale) {
  testing::CheckpointDir cache;
  Weights7bScenario scenario;
  for (Scale scale : {Scale::tiny, Scale::small, Scale::full}) {
    for (const VariantSpec& spec : scenario.variants()) {
      const auto run = run_weights7b(spec.name, DeviceKind::dry, scale, scenario.budget(scale));
      EXPECT_EQ(run.oom.has_value(), spec.expected == Expect::oom) << spec.name << " " << scale_name(scale);
      if (run.oom) {
        EXPECT_TRUE(testing::oom_on_weights(run)) << spec.name << " " << scale_name(scale);
      }
    }
  }
  EXPECT_TRUE(std::filesystem::is_empty(cache.dir().path()));
}

}  // namespace
}  // namespace oomlab::scenarios
