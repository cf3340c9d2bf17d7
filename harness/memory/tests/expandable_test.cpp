// Expandable segments: one address range per (stream, pool), mapped in page steps.
#include <gtest/gtest.h>

#include "allocator_fixture.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;
using testing::DryAllocator;

std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

AllocatorConfig expandable(std::size_t budget = AllocatorConfig::kUnlimited) {
  AllocatorConfig config;
  config.expandable_segments = true;
  config.budget = budget;
  return config;
}

TEST(Expandable, GrowsInPageSteps) {
  DryAllocator dry(expandable());
  auto* a = static_cast<char*>(dry.allocator.allocate(3_MiB));
  EXPECT_EQ(dry.stats().reserved.current, i64(4_MiB));
  auto* b = static_cast<char*>(dry.allocator.allocate(3_MiB));
  EXPECT_EQ(dry.stats().reserved.current, i64(6_MiB));  // 1 MiB free tail + one more page
  EXPECT_EQ(b, a + 3_MiB);                               // same range, right after
  EXPECT_EQ(dry.stats().segments.current, 1);
  EXPECT_EQ(dry.count(EventKind::segment_map), 2u);
}

TEST(Expandable, FreedSpaceCoalescesIntoOneBlock) {
  DryAllocator dry(expandable());
  void* a = dry.allocator.allocate(3_MiB);
  void* b = dry.allocator.allocate(3_MiB);
  dry.allocator.deallocate(a);
  dry.allocator.deallocate(b);
  EXPECT_EQ(dry.stats().largest_free_block, 6_MiB);
  EXPECT_EQ(dry.allocator.allocate(6_MiB), a);
  EXPECT_EQ(dry.stats().reserved.current, i64(6_MiB));
}

TEST(Expandable, EmptyCacheUnmapsTrailingFreePages) {
  DryAllocator dry(expandable());
  void* a = dry.allocator.allocate(3_MiB);
  void* b = dry.allocator.allocate(3_MiB);
  dry.allocator.deallocate(b);
  dry.allocator.empty_cache();
  EXPECT_EQ(dry.stats().reserved.current, i64(4_MiB));  // a's pages stay mapped
  EXPECT_EQ(dry.stats().segments.current, 1);
  EXPECT_EQ(dry.allocator.block_size(a), 3_MiB);
  dry.allocator.deallocate(a);
  dry.allocator.empty_cache();
  EXPECT_EQ(dry.stats().reserved.current, 0);
  EXPECT_EQ(dry.stats().segments.current, 0);
}

TEST(Expandable, RegrowsAfterShrinking) {
  DryAllocator dry(expandable());
  void* a = dry.allocator.allocate(8_MiB);
  dry.allocator.deallocate(a);
  dry.allocator.empty_cache();
  void* b = dry.allocator.allocate(2_MiB);
  EXPECT_EQ(dry.stats().reserved.current, i64(2_MiB));
  dry.allocator.deallocate(b);
}

TEST(Expandable, SmallPoolAndStreamsHaveTheirOwnRanges) {
  DryAllocator dry(expandable());
  dry.allocator.allocate(1_KiB);
  dry.allocator.allocate(4_MiB);
  dry.allocator.allocate(4_MiB, Tag::other, 5);
  EXPECT_EQ(dry.stats().segments.current, 3);
  EXPECT_EQ(dry.stats().reserved.current, i64(2_MiB + 4_MiB + 4_MiB));
}

TEST(Expandable, GrowthStopsAtTheBudget) {
  DryAllocator dry(expandable(4_MiB));
  void* a = dry.allocator.allocate(3_MiB);
  EXPECT_THROW(dry.allocator.allocate(2_MiB), OomError);  // needs one more page: 6 MiB > 4 MiB
  EXPECT_THROW(dry.allocator.allocate(1_MiB + 1), OomError);  // the 1 MiB tail is too small
  dry.allocator.deallocate(a);
  EXPECT_NE(dry.allocator.allocate(4_MiB), nullptr);  // the whole mapped range, no growth
  EXPECT_EQ(dry.stats().reserved.current, i64(4_MiB));
}

TEST(Expandable, RequestsBiggerThanOnePageSpanSeveral) {
  DryAllocator dry(expandable());
  void* p = dry.allocator.allocate(100_MiB + 1);
  EXPECT_EQ(dry.allocator.block_size(p), 100_MiB + 512);
  EXPECT_EQ(dry.stats().reserved.current, i64(102_MiB));
}

}  // namespace
}  // namespace oomlab::memory
