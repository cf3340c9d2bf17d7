// weights7b on host at tiny scale: real files, real bytes, the story budget's outcomes.
#include <gtest/gtest.h>

#include "scenarios/models/safetensors/safetensors_format.hpp"
#include "scenarios/weights7b/tests/weights7b_test_support.hpp"
#include "scenarios/weights7b/weights7b.hpp"

namespace oomlab::scenarios {
namespace {

using testing::run_weights7b;

std::string tiny_budget() { return Weights7bScenario().budget(Scale::tiny); }

TEST(Weights7bHostTiny, StoryBudgetOutcomesMatchTheDeclaredExpectations) {
  testing::CheckpointDir cache;
  for (const VariantSpec& spec : Weights7bScenario().variants()) {
    const auto run = run_weights7b(spec.name, DeviceKind::host, Scale::tiny, tiny_budget());
    EXPECT_EQ(run.oom.has_value(), spec.expected == Expect::oom) << spec.name;
    if (run.oom) {
      EXPECT_TRUE(testing::oom_on_weights(run)) << spec.name;
    }
  }
}

TEST(Weights7bHostTiny, BrokenAndFixedAndBf16FileLoadTheSameBf16Bits) {
  testing::CheckpointDir cache;
  // broken needs room for its 6 bytes/param: give it a budget where it completes.
  const auto [broken, fixed, from_bf16] =
      testing::expect_three_loads_agree(DeviceKind::host, Scale::tiny, "1GiB", tiny_budget());
  if (HasFailure()) return;
  EXPECT_NEAR(broken.metrics.at("peak_bytes_per_parameter"), 6.0, 0.05);
  EXPECT_GT(fixed.metrics.at("staging_chunks"), 2 * 9.0);  // several chunks per big tensor
  // The time breakdown is recorded: copying from the file took time, nothing is negative.
  EXPECT_GT(fixed.metrics.at("host_copy_seconds"), 0.0);
  EXPECT_GE(fixed.metrics.at("allocate_seconds"), 0.0);
  EXPECT_GE(fixed.metrics.at("slot_wait_seconds"), 0.0);
}

TEST(Weights7bHostTiny, Int8ErrorStaysWithinItsBound) {
  testing::CheckpointDir cache;
  const auto run = run_weights7b("fixed-int8", DeviceKind::host, Scale::tiny, tiny_budget());
  ASSERT_FALSE(run.oom);
  EXPECT_LE(run.metrics.at("int8_error_over_bound"), 1.0);
  EXPECT_GT(run.metrics.at("int8_error_over_bound"), 0.5);  // rounding really happened
  EXPECT_LT(run.metrics.at("weights_bytes_per_parameter"), 1.1);
}

TEST(Weights7bHostTiny, HostAndDryMakeTheSameAllocations) {
  testing::CheckpointDir cache;
  for (const char* variant : {"fixed", "fixed-int8", "fixed-bf16-file", "broken"}) {
    const auto host = run_weights7b(variant, DeviceKind::host, Scale::tiny, "1GiB");
    const auto dry = run_weights7b(variant, DeviceKind::dry, Scale::tiny, "1GiB");
    ASSERT_EQ(host.events.size(), dry.events.size()) << variant;
    for (std::size_t i = 0; i < host.events.size(); ++i) {
      EXPECT_EQ(host.events[i].kind, dry.events[i].kind) << variant << " event " << i;
      EXPECT_EQ(host.events[i].bytes, dry.events[i].bytes) << variant << " event " << i;
    }
    EXPECT_EQ(host.stats.allocated.peak, dry.stats.allocated.peak) << variant;
  }
}

TEST(Weights7bHostTiny, AGivenMalformedCheckpointIsAClearError) {
  testing::CheckpointDir cache;
  const std::string path = cache.dir().file("bad.safetensors");
  const std::string bytes = std::string("\x0a\0\0\0\0\0\0\0", 8) + "{not json}";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  ::setenv("OOMLAB_WEIGHTS7B_F32", path.c_str(), 1);
  try {
    run_weights7b("fixed", DeviceKind::host, Scale::tiny, tiny_budget());
    ADD_FAILURE() << "no error";
  } catch (const safetensors::SafetensorsError& error) {
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
  ::unsetenv("OOMLAB_WEIGHTS7B_F32");
}

TEST(Weights7bHostTiny, UnknownVariantIsAnError) {
  testing::CheckpointDir cache;
  EXPECT_THROW(run_weights7b("fixed-int4", DeviceKind::host, Scale::tiny, tiny_budget()),
               std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::scenarios
