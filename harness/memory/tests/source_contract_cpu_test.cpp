// The source contract on the CPU sources.
#include "source_contract.hpp"

namespace oomlab::memory::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(
    Cpu, SourceContract,
    ::testing::Values(SourceCase{"host", make_host_source, [] { return true; }},
                      SourceCase{"dry", make_dry_source, [] { return true; }}),
    source_case_name);

TEST(CudaFactories, ThrowAClearErrorWhenUnusable) {
#if !OOMLAB_WITH_CUDA
  try {
    make_cuda_source();
    ADD_FAILURE() << "made a cuda source without CUDA";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "oomlab was built without CUDA");
  }
  EXPECT_THROW(make_cuda_vmm_source(), std::runtime_error);
#else
  GTEST_SKIP() << "built with CUDA: the GPU executable covers these sources";
#endif
}

TEST(DrySource, AddressesAreNeverBacked) {
  auto dry = make_dry_source();
  EXPECT_FALSE(dry->has_backing());
  void* p = dry->allocate(2 << 20);
  EXPECT_GE(reinterpret_cast<std::uintptr_t>(p), std::uintptr_t{1} << 60);
  dry->deallocate(p, 2 << 20);
  EXPECT_THROW(dry->deallocate(p, 2 << 20), std::invalid_argument);
}

TEST(DrySource, ReleasedAddressSpaceIsReused) {
  auto dry = make_dry_source();
  void* a = dry->allocate(20 << 20);
  dry->deallocate(a, 20 << 20);
  EXPECT_EQ(dry->allocate(20 << 20), a);
}

}  // namespace
}  // namespace oomlab::memory::testing
