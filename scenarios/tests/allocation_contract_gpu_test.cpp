// The one invariant on a GPU: cuda (small scale) makes dry's allocator events and peaks, for every
// registered scenario and variant (one suite instead of a copy per scenario).
#include "harness/testing/require_gpu.hpp"
#include "scenarios/tests/allocation_contract.hpp"

namespace oomlab::testing {
namespace {

class CudaAllocatesAsDry : public ::testing::TestWithParam<ContractCase> {};

TEST_P(CudaAllocatesAsDry, AtSmallScale) {
  OOMLAB_REQUIRE_GPU();
  expect_same_allocations_as_dry(GetParam(), DeviceKind::cuda, Scale::small);
}

INSTANTIATE_TEST_SUITE_P(EveryVariant, CudaAllocatesAsDry, ::testing::ValuesIn(every_variant()), ContractCaseName());

}  // namespace
}  // namespace oomlab::testing
