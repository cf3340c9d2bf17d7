// Expandable segments as PyTorch makes them: one address range per (stream, pool), mapped in
// 2 MiB (small pool) or 20 MiB (large pool) granules at the lowest address with room; releasing
// the cache unmaps every whole free granule, wherever it lies.
#include <gtest/gtest.h>

#include <vector>

#include "allocator_fixture.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;
using testing::DryAllocator;

std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

AllocatorConfig expandable(std::size_t budget = AllocatorConfig::kUnlimited) {
  return testing::with_setting(&AllocatorConfig::expandable_segments, true, budget);
}

TEST(Expandable, LargePoolMapsTwentyMiBGranules) {
  DryAllocator dry(expandable());
  auto* a = static_cast<char*>(dry.allocator.allocate(3_MiB));
  EXPECT_EQ(dry.stats().reserved.current, i64(20_MiB));
  auto* b = static_cast<char*>(dry.allocator.allocate(3_MiB));  // from the granule's cached rest
  EXPECT_EQ(b, a + 3_MiB);
  EXPECT_EQ(dry.stats().reserved.current, i64(20_MiB));
  auto* c = static_cast<char*>(dry.allocator.allocate(30_MiB));  // 14 MiB cached + one more granule
  EXPECT_EQ(c, b + 3_MiB);
  EXPECT_EQ(dry.stats().reserved.current, i64(40_MiB));
  EXPECT_EQ(dry.stats().segments.current, 1);
  EXPECT_EQ(dry.sizes(EventKind::segment_map), (std::vector<std::size_t>{20_MiB, 20_MiB}));
}

TEST(Expandable, SmallPoolMapsTwoMiBGranules) {
  DryAllocator dry(expandable());
  dry.allocator.allocate(1_KiB);
  EXPECT_EQ(dry.stats().reserved.current, i64(2_MiB));
}

TEST(Expandable, FreedSpaceCoalescesIntoOneBlock) {
  DryAllocator dry(expandable());
  void* a = dry.allocator.allocate(3_MiB);
  void* b = dry.allocator.allocate(3_MiB);
  dry.allocator.deallocate(a);
  dry.allocator.deallocate(b);
  EXPECT_EQ(dry.stats().largest_free_block, 20_MiB);
  EXPECT_EQ(dry.allocator.allocate(6_MiB), a);
  EXPECT_EQ(dry.stats().reserved.current, i64(20_MiB));
}

TEST(Expandable, EmptyCacheUnmapsEveryWholeFreeGranule) {
  DryAllocator dry(expandable());
  void* a = dry.allocator.allocate(30_MiB);  // [0, 30): two granules mapped
  void* b = dry.allocator.allocate(30_MiB);  // [30, 60): the third
  dry.allocator.deallocate(a);
  dry.allocator.empty_cache();
  // [0, 20) is a whole free granule before b; [20, 30) shares a granule with b and stays.
  EXPECT_EQ(dry.stats().reserved.current, i64(40_MiB));
  EXPECT_EQ(dry.stats().segments.current, 1);
  EXPECT_EQ(dry.allocator.check_consistency(), "");
  dry.allocator.deallocate(b);
  dry.allocator.empty_cache();
  EXPECT_EQ(dry.stats().reserved.current, 0);
  EXPECT_EQ(dry.stats().segments.current, 0);  // the range is empty again: its address space goes too
  EXPECT_EQ(dry.sizes(EventKind::segment_unmap), (std::vector<std::size_t>{20_MiB, 40_MiB}));
}

TEST(Expandable, UnmappedHolesFillFirst) {
  DryAllocator dry(expandable());
  void* a = dry.allocator.allocate(30_MiB);
  void* b = dry.allocator.allocate(30_MiB);
  dry.allocator.deallocate(a);
  dry.allocator.empty_cache();  // unmaps [0, 20)
  // 15 MiB: the hole at the lowest address is mapped again and joins the cached [20, 30).
  EXPECT_EQ(dry.allocator.allocate(15_MiB), a);
  EXPECT_EQ(dry.stats().reserved.current, i64(60_MiB));
  EXPECT_EQ(dry.allocator.check_consistency(), "");
  dry.allocator.deallocate(b);
}

TEST(Expandable, BestFitKeepsTheGrowableTail) {
  DryAllocator dry(expandable());
  auto* a = static_cast<char*>(dry.allocator.allocate(10_MiB));  // [0, 10)
  dry.allocator.allocate(2_MiB);                                // [10, 12)
  dry.allocator.allocate(3_MiB);                                // [12, 15); [15, 20) cached, then unmapped
  dry.allocator.deallocate(a);
  // Both cached blocks fit 4 MiB; the 5 MiB tail could grow without limit, so the bounded
  // 10 MiB block serves (PyTorch's expandable_size in get_free_block).
  EXPECT_EQ(dry.allocator.allocate(4_MiB), a);
}

TEST(Expandable, SmallPoolAndStreamsHaveTheirOwnRanges) {
  DryAllocator dry(expandable());
  dry.allocator.allocate(1_KiB);
  dry.allocator.allocate(4_MiB);
  dry.allocator.allocate(4_MiB, Tag::other, 5);
  EXPECT_EQ(dry.stats().segments.current, 3);
  EXPECT_EQ(dry.stats().reserved.current, i64(2_MiB + 20_MiB + 20_MiB));
}

TEST(Expandable, ABudgetThatIsTheDeviceRefusesPagesPastIt) {
  DryAllocator dry(expandable(40_MiB));
  void* a = dry.allocator.allocate(3_MiB);
  void* b = dry.allocator.allocate(25_MiB);  // the cached 17 MiB and one more granule: 40 MiB
  EXPECT_EQ(dry.stats().reserved.current, i64(40_MiB));
  EXPECT_THROW(dry.allocator.allocate(14_MiB), OomError);  // a third granule would pass 40 MiB
  void* c = dry.allocator.allocate(10_MiB);  // the cached rest of the second granule still serves
  for (void* p : {a, b, c}) dry.allocator.deallocate(p);
  EXPECT_NE(dry.allocator.allocate(40_MiB), nullptr);  // everything mapped, no growth
  EXPECT_EQ(dry.stats().reserved.current, i64(40_MiB));
}

// Under set_per_process_memory_fraction PyTorch checks the segment a request would get (22 MiB
// for 22 MiB) before mapping, then maps whole granules (40 MiB), which may pass the fraction.
TEST(Expandable, AFractionChecksTheWouldBeSegmentThenMapsWholeGranules) {
  AllocatorConfig config = expandable(50_MiB);
  config.budget_is_fraction = true;
  DryAllocator dry(config);
  void* a = dry.allocator.allocate(20_MiB);  // one whole granule
  void* b = dry.allocator.allocate(22_MiB);  // 20 + 22 <= 50: two more granules
  EXPECT_EQ(dry.stats().reserved.current, i64(60_MiB));
  EXPECT_EQ(dry.allocator.check_consistency(), "");
  EXPECT_THROW(dry.allocator.allocate(20_MiB), OomError);  // 60 + 20 > 50, nothing to unmap
  dry.allocator.deallocate(a);
  dry.allocator.deallocate(b);
}

TEST(Expandable, TheDeviceRefusesTheSameGranules) {
  DryAllocator dry(expandable(50_MiB));
  dry.allocator.allocate(20_MiB);
  EXPECT_THROW(dry.allocator.allocate(22_MiB), OomError);  // 20 + 40 mapped > 50
  EXPECT_EQ(dry.stats().reserved.current, i64(20_MiB));
}

TEST(Expandable, RequestsBiggerThanOneGranuleSpanSeveral) {
  DryAllocator dry(expandable());
  void* p = dry.allocator.allocate(100_MiB + 1);
  EXPECT_EQ(dry.allocator.block_size(p), 100_MiB + 512);
  EXPECT_EQ(dry.stats().reserved.current, i64(120_MiB));
}

}  // namespace
}  // namespace oomlab::memory
