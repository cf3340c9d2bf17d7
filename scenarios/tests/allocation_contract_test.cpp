// The one invariant on CPUs: host (real math, tiny scale) makes dry's allocator events, for every
// registered scenario and variant.
#include "scenarios/tests/allocation_contract.hpp"

namespace oomlab::testing {
namespace {

class HostAllocatesAsDry : public ::testing::TestWithParam<ContractCase> {};

TEST_P(HostAllocatesAsDry, AtTinyScale) { expect_same_allocations_as_dry(GetParam(), DeviceKind::host, Scale::tiny); }

INSTANTIATE_TEST_SUITE_P(EveryVariant, HostAllocatesAsDry, ::testing::ValuesIn(every_variant()), ContractCaseName());

}  // namespace
}  // namespace oomlab::testing
