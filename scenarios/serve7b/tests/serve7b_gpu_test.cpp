// serve7b on a GPU at tiny scale: cuda makes dry's allocations event for event, and its greedy
// tokens agree with the CPU references' (cuBLAS rounds in another order, so a near tie may flip
// a token and greedy decoding follows it: agreement, not equality).
#include <gtest/gtest.h>

#include "harness/testing/require_gpu.hpp"
#include "harness/testing/run_scenario.hpp"
#include "scenarios/serve7b/serve7b_knobs.hpp"
#include "scenarios/serve7b/serve_run.hpp"

namespace oomlab {
namespace {

using scenarios::serve7b::knob_values;
using scenarios::serve7b::make_plan;

serve::ServeOutcome serve_on(DeviceKind kind, const std::string& variant) {
  auto values = knob_values(variant, Scale::tiny);
  values["prompt_max"] = "512";
  Device device(kind, {});
  return serve::serve(make_plan(KnobValues(values), 4), device, nullptr);
}

double agreement(const serve::ServeOutcome& a, const serve::ServeOutcome& b) {
  int same = 0, all = 0;
  for (std::size_t r = 0; r < a.tokens.size(); ++r) {
    for (std::size_t i = 0; i < a.tokens[r].size() && i < b.tokens[r].size(); ++i, ++all)
      same += a.tokens[r][i] == b.tokens[r][i];
  }
  return all == 0 ? 0.0 : static_cast<double>(same) / all;
}

TEST(Serve7bGpu, CudaMakesDrysAllocations) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"fixed-paged", "broken-growing-cache", "fixed-kv-int8"}) {
    const auto cuda = testing::run_scenario("serve7b", variant, DeviceKind::cuda, Scale::tiny, "1GiB", 3);
    const auto dry = testing::run_scenario("serve7b", variant, DeviceKind::dry, Scale::tiny, "1GiB", 3);
    ASSERT_FALSE(cuda.oom.has_value()) << variant;
    ASSERT_EQ(cuda.events.size(), dry.events.size()) << variant;
    for (std::size_t i = 0; i < cuda.events.size(); ++i) {
      ASSERT_TRUE(cuda.events[i].same_as(dry.events[i])) << variant << " event " << i;
    }
  }
}

TEST(Serve7bGpu, TokensAgreeWithTheCpuReferenceAndAcrossCaches) {
  OOMLAB_REQUIRE_GPU();
  const auto host = serve_on(DeviceKind::host, "fixed-paged");
  const auto paged = serve_on(DeviceKind::cuda, "fixed-paged");
  const auto padded = serve_on(DeviceKind::cuda, "broken-padded");
  const auto growing = serve_on(DeviceKind::cuda, "broken-growing-cache");
  const auto int8 = serve_on(DeviceKind::cuda, "fixed-kv-int8");
  EXPECT_GE(agreement(paged, host), 0.75);
  EXPECT_GE(agreement(paged, padded), 0.9);
  EXPECT_GE(agreement(paged, growing), 0.9);
  EXPECT_GE(agreement(paged, int8), 0.7);
  for (std::size_t r = 0; r < host.tokens.size(); ++r) EXPECT_EQ(paged.tokens[r].size(), host.tokens[r].size());
}

}  // namespace
}  // namespace oomlab
