// Statistics and releases cost the same with 40k free blocks cached as with one: the pools keep
// the largest free block and the releasable blocks as blocks come and go (detail::FreeBlocks).
// A replay asks for stats() after every new segment and, with --what-if, empties the cache at
// every phase boundary; walking every free block made a 100k-block snapshot take minutes.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/memory/tests/allocator_fixture.hpp"

namespace oomlab::memory {
namespace {

using namespace oomlab::literals;
using testing::DryAllocator;

constexpr std::size_t kPairs = 40'000;
constexpr std::size_t kCalls = 200'000;

// Live blocks in pairs with a 512-byte free block between every two pairs: a temporary is
// freed and the pair's second block takes its place, 512 bytes smaller.
std::vector<void*> fragment(CachingAllocator& allocator) {
  std::vector<void*> live;
  for (std::size_t i = 0; i < kPairs; ++i) {
    live.push_back(allocator.allocate(192_KiB));
    allocator.deallocate(allocator.allocate(64_KiB));
    live.push_back(allocator.allocate(64_KiB - 512));
  }
  return live;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(AllocatorScaling, StatsDoNotWalkTheFreeBlocks) {
  DryAllocator dry;
  const std::vector<void*> live = fragment(dry.allocator);
  ASSERT_EQ(dry.allocator.check_consistency(), "");
  const MemoryStats first = dry.stats();
  EXPECT_LT(first.largest_free_block, 64_KiB) << "only the holes between pairs are free";
  const auto start = std::chrono::steady_clock::now();
  std::size_t largest = 0;
  for (std::size_t i = 0; i < kCalls; ++i) largest += dry.stats().largest_free_block;
  // Walking 40k free blocks 200k times takes seconds; kept counters, milliseconds.
  EXPECT_LT(seconds_since(start), 1.0);
  EXPECT_EQ(largest, kCalls * first.largest_free_block);
  for (void* block : live) dry.allocator.deallocate(block);
}

TEST(AllocatorScaling, EmptyCacheDoesNotWalkTheSplitBlocks) {
  DryAllocator dry;
  const std::vector<void*> live = fragment(dry.allocator);
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < kCalls; ++i) dry.allocator.empty_cache();  // nothing whole to release
  EXPECT_LT(seconds_since(start), 1.0);
  ASSERT_EQ(dry.allocator.check_consistency(), "");
  for (void* block : live) dry.allocator.deallocate(block);
  dry.allocator.empty_cache();
  EXPECT_EQ(dry.stats().reserved.current, 0);
  EXPECT_EQ(dry.stats().largest_free_block, 0u);
  ASSERT_EQ(dry.allocator.check_consistency(), "");
}

}  // namespace
}  // namespace oomlab::memory
