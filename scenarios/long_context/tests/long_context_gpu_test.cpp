// long_context on a GPU at small scale: naive attention runs out of memory and fused fits (that
// cuda makes dry's requests is the contract suite's: scenarios/tests/allocation_contract_gpu_test.cpp).
#include <gtest/gtest.h>

#include "harness/testing/require_gpu.hpp"
#include "harness/testing/run_scenario.hpp"

namespace oomlab {
namespace {

using testing::run_scenario;

TEST(LongContextGpu, SmallScaleOutcomesAsTheStorySays) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"broken", "fixed"}) {
    const auto cuda = run_scenario("long_context", variant, DeviceKind::cuda, Scale::small);
    EXPECT_EQ(cuda.oom.has_value(), std::string(variant) == "broken") << variant;
  }
}

}  // namespace
}  // namespace oomlab
