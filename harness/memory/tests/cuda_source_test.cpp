// cuda and cuda_vmm specifics: device OOM is an answer not an error, external bytes, real
// memory behind expandable growth, record_stream with a real stream. Skipped without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "harness/memory/caching_allocator.hpp"
#include "harness/memory/size.hpp"
#include "harness/testing/require_gpu.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;

TEST(CudaSource, DeviceOomReturnsNullAndLeavesNoStickyError) {
  OOMLAB_REQUIRE_GPU();
  auto source = make_cuda_source();
  EXPECT_EQ(source->allocate(std::size_t{1} << 50), nullptr);  // 1 PiB
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  void* p = source->allocate(2_MiB);  // and the device still works
  ASSERT_NE(p, nullptr);
  source->deallocate(p, 2_MiB);
}

TEST(CudaSource, ExternalBytesSeeTheContextButNotOwnSegments) {
  OOMLAB_REQUIRE_GPU();
  auto source = make_cuda_source();
  std::size_t before = source->external_bytes();
  EXPECT_GT(before, 0u) << "the CUDA context itself is external";
  EXPECT_GT(source->capacity_bytes(), before);
  void* p = source->allocate(256_MiB);
  ASSERT_NE(p, nullptr);
  std::size_t during = source->external_bytes();
  // Our own 256 MiB must not show up as external (allow the driver's rounding slack).
  EXPECT_LT(during, before + 64_MiB);
  source->deallocate(p, 256_MiB);
}

TEST(CudaSource, BudgetOomOnARealDeviceIsDiagnosedCapacity) {
  OOMLAB_REQUIRE_GPU();
  auto source = make_cuda_source();
  AllocatorConfig config;
  config.budget = 64_MiB;
  CachingAllocator allocator(*source, config);
  void* a = allocator.allocate(40_MiB, Tag::weights, 0);
  ASSERT_EQ(cudaMemset(a, 0, 40_MiB), cudaSuccess);
  try {
    allocator.allocate(40_MiB, Tag::activations, 0);
    ADD_FAILURE() << "no OOM";
  } catch (const OomError& e) {
    EXPECT_EQ(e.info().diagnosis, Diagnosis::capacity) << e.what();
    EXPECT_EQ(e.info().external, 0u) << "the context is not charged against a budget";
  }
  allocator.deallocate(a);
}

TEST(CudaVmmSource, ExpandableGrowthIsRealMemory) {
  OOMLAB_REQUIRE_GPU();
  auto source = make_cuda_vmm_source();
  AllocatorConfig config;
  config.expandable_segments = true;
  CachingAllocator allocator(*source, config);
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(allocator.allocate(3_MiB + 4096));
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    ASSERT_EQ(cudaMemset(blocks[i], static_cast<int>(i + 1), 3_MiB + 4096), cudaSuccess);
  }
  std::vector<unsigned char> back(3_MiB + 4096);
  ASSERT_EQ(cudaMemcpy(back.data(), blocks[4], back.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back.front(), 5);
  EXPECT_EQ(back.back(), 5);
  EXPECT_EQ(allocator.stats().segments.current, 1);
  for (void* p : blocks) allocator.deallocate(p);
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().reserved.current, 0);
}

TEST(CudaSource, RecordStreamWithARealStream) {
  OOMLAB_REQUIRE_GPU();
  auto source = make_cuda_source();
  CachingAllocator allocator(*source, AllocatorConfig{});
  cudaStream_t copy_stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking), cudaSuccess);
  auto copy = reinterpret_cast<StreamHandle>(copy_stream);
  void* p = allocator.allocate(8_MiB, Tag::data, 0);
  ASSERT_EQ(cudaMemsetAsync(p, 1, 8_MiB, copy_stream), cudaSuccess);
  allocator.record_stream(p, copy);
  allocator.deallocate(p);
  ASSERT_EQ(cudaStreamSynchronize(copy_stream), cudaSuccess);
  void* q = allocator.allocate(8_MiB, Tag::data, 0);  // events done: the block is reused
  EXPECT_EQ(q, p);
  allocator.deallocate(q);
  ASSERT_EQ(cudaStreamDestroy(copy_stream), cudaSuccess);
}

}  // namespace
}  // namespace oomlab::memory
