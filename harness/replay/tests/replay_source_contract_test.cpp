// The memory-source contract (harness/memory/tests/source_contract.hpp) on replay's source: the
// fifth implementation keeps the same promises as cuda, cuda_vmm, host and dry. Outside a
// compared step it hands out address ranges with no backing, as dry does (and names itself so).
#include "harness/memory/tests/source_contract.hpp"
#include "harness/replay/replay_source.hpp"

namespace oomlab::memory::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(
    Replay, SourceContract,
    ::testing::Values(SourceCase{"dry", [] { return std::make_unique<replay::ReplaySource>(); }, [] { return true; }}),
    source_case_name);

}  // namespace
}  // namespace oomlab::memory::testing
