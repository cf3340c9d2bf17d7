// The source contract on cuda and cuda_vmm; skipped (not passed) without a GPU.
#include "harness/device/device.hpp"
#include "source_contract.hpp"

namespace oomlab::memory::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(
    Gpu, SourceContract,
    ::testing::Values(SourceCase{"cuda", make_cuda_source, [] { return oomlab::cuda_available(); }},
                      SourceCase{"cuda_vmm", make_cuda_vmm_source, [] { return oomlab::cuda_available(); }}),
    source_case_name);

}  // namespace
}  // namespace oomlab::memory::testing
