// One test per edge of each caching-allocator rule (the list in caching_allocator.hpp).
#include <gtest/gtest.h>

#include <stdexcept>

#include "allocator_fixture.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;
using testing::DryAllocator;
using testing::with_budget;

std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

// What a fresh allocator reserves for one request of `bytes`: the segment size the rules pick.
std::int64_t reserved_for(std::size_t bytes) {
  DryAllocator dry;
  dry.allocator.allocate(bytes);
  return dry.stats().reserved.current;
}

// ---- rounding ----
TEST(Rounding, OneByteBecomes512) {
  DryAllocator dry;
  void* p = dry.allocator.allocate(1);
  EXPECT_EQ(dry.allocator.block_size(p), 512u);
  EXPECT_EQ(dry.stats().requested.current, 1);
  EXPECT_EQ(dry.stats().allocated.current, 512);
}
TEST(Rounding, Exactly512Stays512) {
  DryAllocator dry;
  EXPECT_EQ(dry.allocator.block_size(dry.allocator.allocate(512)), 512u);
}
TEST(Rounding, Byte513Becomes1024) {
  DryAllocator dry;
  EXPECT_EQ(dry.allocator.block_size(dry.allocator.allocate(513)), 1024u);
}
TEST(Rounding, ZeroBytesIsNull) {
  DryAllocator dry;
  EXPECT_EQ(dry.allocator.allocate(0), nullptr);
  EXPECT_EQ(dry.stats().reserved.current, 0);
}

// ---- pools and segment sizes ----
TEST(Pools, OneMiBIsSmallAndGets2MiBSegment) {
  EXPECT_EQ(reserved_for(1_MiB), i64(2_MiB));
}
TEST(Pools, OneByteOverOneMiBIsLargeAndGets20MiBSegment) {
  DryAllocator dry;
  void* p = dry.allocator.allocate(1_MiB + 1);
  EXPECT_EQ(dry.allocator.block_size(p), 1_MiB + 512);
  EXPECT_EQ(dry.stats().reserved.current, i64(20_MiB));
}
TEST(Pools, SmallAndLargeNeverShareASegment) {
  DryAllocator dry;
  dry.allocator.allocate(2_MiB);    // large: 20 MiB segment with 18 MiB free
  dry.allocator.allocate(512_KiB);  // small: needs its own 2 MiB segment
  EXPECT_EQ(dry.stats().segments.current, 2);
  EXPECT_EQ(dry.stats().reserved.current, i64(22_MiB));
}
TEST(Pools, JustUnder10MiBGets20MiBSegment) {
  EXPECT_EQ(reserved_for(10_MiB - 512), i64(20_MiB));
}
TEST(Pools, Exactly10MiBGetsItsOwnSegment) {
  EXPECT_EQ(reserved_for(10_MiB), i64(10_MiB));
}
TEST(Pools, AboveTenMiBRoundsSegmentTo2MiB) {
  EXPECT_EQ(reserved_for(10_MiB + 1), i64(12_MiB));
}
TEST(Pools, StreamsDoNotShareFreeBlocks) {
  DryAllocator dry;
  void* a = dry.allocator.allocate(4_MiB, Tag::other, 1);
  dry.allocator.deallocate(a);
  dry.allocator.allocate(4_MiB, Tag::other, 2);
  EXPECT_EQ(dry.stats().segments.current, 2);
}

// ---- splitting ----
TEST(Split, SmallRemainderOf512IsKept) {
  DryAllocator dry;
  dry.allocator.allocate(1_MiB);
  dry.allocator.allocate(1_MiB - 512);  // leaves exactly 512 B: split off
  void* last = dry.allocator.allocate(512);
  EXPECT_EQ(dry.allocator.block_size(last), 512u);
  EXPECT_EQ(dry.stats().segments.current, 1);
}
TEST(Split, SmallExactFitLeavesNoRemainder) {
  DryAllocator dry;
  dry.allocator.allocate(1_MiB);
  dry.allocator.allocate(1_MiB);
  EXPECT_EQ(dry.stats().segments.current, 1);
  EXPECT_EQ(dry.stats().largest_free_block, 0u);
}
TEST(Split, LargeRemainderOfExactlyOneMiBIsNotSplit) {
  DryAllocator dry;
  void* p = dry.allocator.allocate(19_MiB);  // 20 MiB segment, 1 MiB left: kept inside the block
  EXPECT_EQ(dry.allocator.block_size(p), 20_MiB);
  EXPECT_EQ(dry.stats().allocated.current, i64(20_MiB));
  EXPECT_EQ(dry.stats().requested.current, i64(19_MiB));
}
TEST(Split, LargeRemainderJustOverOneMiBIsSplit) {
  DryAllocator dry;
  void* p = dry.allocator.allocate(19_MiB - 512);
  EXPECT_EQ(dry.allocator.block_size(p), 19_MiB - 512);
  EXPECT_EQ(dry.stats().largest_free_block, 1_MiB + 512);
}
TEST(Split, BestFitPicksTheSmallestBlockThatFits) {
  DryAllocator dry;
  void* a = dry.allocator.allocate(6_MiB);
  void* sep1 = dry.allocator.allocate(2_MiB);
  void* b = dry.allocator.allocate(3_MiB);
  void* sep2 = dry.allocator.allocate(2_MiB);
  dry.allocator.deallocate(a);  // free: 6 MiB, 3 MiB, and the 7 MiB tail
  dry.allocator.deallocate(b);
  void* c = dry.allocator.allocate(3_MiB);
  EXPECT_EQ(c, b);
  (void)sep1;
  (void)sep2;
}

// ---- coalescing ----
TEST(Coalesce, FreeMergesWithBothNeighbours) {
  DryAllocator dry;
  void* a = dry.allocator.allocate(2_MiB);
  void* b = dry.allocator.allocate(2_MiB);
  void* c = dry.allocator.allocate(2_MiB);
  dry.allocator.deallocate(a);
  dry.allocator.deallocate(c);  // merges with the 14 MiB tail
  EXPECT_EQ(dry.stats().largest_free_block, 16_MiB);
  dry.allocator.deallocate(b);  // merges with a (before) and c+tail (after)
  EXPECT_EQ(dry.stats().largest_free_block, 20_MiB);
  void* whole = dry.allocator.allocate(19_MiB);
  EXPECT_EQ(whole, a);
  EXPECT_EQ(dry.stats().segments.current, 1);
}
TEST(Coalesce, NeighboursInOtherSegmentsAreNotMerged) {
  DryAllocator dry;
  void* a = dry.allocator.allocate(12_MiB);
  void* b = dry.allocator.allocate(12_MiB);
  dry.allocator.deallocate(a);
  dry.allocator.deallocate(b);
  EXPECT_EQ(dry.stats().largest_free_block, 12_MiB);
}

// ---- max_split_size ----
AllocatorConfig max_split(std::size_t bytes) {
  AllocatorConfig config;
  config.max_split_size = bytes;
  return config;
}
TEST(MaxSplit, OversizeBlockIsNeverSplit) {
  DryAllocator dry(max_split(32_MiB));
  void* big = dry.allocator.allocate(40_MiB);
  dry.allocator.deallocate(big);
  void* p = dry.allocator.allocate(32_MiB);  // >= max_split, within 20 MiB: takes it whole
  EXPECT_EQ(p, big);
  EXPECT_EQ(dry.allocator.block_size(p), 40_MiB);
}
TEST(MaxSplit, RequestBelowMaxSplitNeverTakesOversizeBlock) {
  DryAllocator dry(max_split(32_MiB));
  void* big = dry.allocator.allocate(40_MiB);
  dry.allocator.deallocate(big);
  void* p = dry.allocator.allocate(12_MiB);
  EXPECT_NE(p, big);
  EXPECT_EQ(dry.stats().reserved.current, i64(52_MiB));
}
TEST(MaxSplit, RequestJustBelowMaxSplitStillRefusesOversizeBlock) {
  DryAllocator dry(max_split(32_MiB));
  void* big = dry.allocator.allocate(40_MiB);
  dry.allocator.deallocate(big);
  EXPECT_NE(dry.allocator.allocate(32_MiB - 512), big);
}
TEST(MaxSplit, OversizeBlockExactly20MiBBiggerIsRefused) {
  DryAllocator dry(max_split(32_MiB));
  void* big = dry.allocator.allocate(54_MiB);
  dry.allocator.deallocate(big);
  EXPECT_NE(dry.allocator.allocate(34_MiB), big);  // 54 >= 34 + 20
}
TEST(MaxSplit, OversizeBlockLessThan20MiBBiggerIsTaken) {
  DryAllocator dry(max_split(32_MiB));
  void* big = dry.allocator.allocate(54_MiB);
  dry.allocator.deallocate(big);
  EXPECT_EQ(dry.allocator.allocate(34_MiB + 512), big);  // 54 < 34.0005 + 20
}
TEST(MaxSplit, BlocksBelowMaxSplitAreSplitNormally) {
  DryAllocator dry(max_split(32_MiB));
  void* p = dry.allocator.allocate(2_MiB);
  EXPECT_EQ(dry.allocator.block_size(p), 2_MiB);
  EXPECT_EQ(dry.stats().largest_free_block, 18_MiB);
}

// ---- budget ----
TEST(Budget, SegmentExactlyAtTheBudgetFits) {
  DryAllocator dry(with_budget(20_MiB));
  EXPECT_NE(dry.allocator.allocate(5_MiB), nullptr);
  EXPECT_EQ(dry.stats().reserved.current, i64(20_MiB));
}
TEST(Budget, OneByteOverTheBudgetIsAnOom) {
  DryAllocator dry(with_budget(20_MiB - 1));
  EXPECT_THROW(dry.allocator.allocate(5_MiB), OomError);
  EXPECT_EQ(dry.stats().num_ooms, 1u);
  EXPECT_EQ(dry.stats().reserved.current, 0);
}
TEST(Budget, SimulatedExternalCountsAgainstTheBudget) {
  AllocatorConfig config = with_budget(30_MiB);
  config.simulated_external = 10_MiB + 1;
  DryAllocator dry(config);
  EXPECT_THROW(dry.allocator.allocate(5_MiB), OomError);
}

// ---- retry after releasing the cache ----
TEST(Retry, ReleasesCachedSegmentsAndRetriesOnce) {
  DryAllocator dry(with_budget(40_MiB));
  void* cached = dry.allocator.allocate(20_MiB);
  dry.allocator.deallocate(cached);          // 20 MiB cached, nothing allocated
  void* p = dry.allocator.allocate(30_MiB);  // 20 + 30 > 40: release, then fits
  EXPECT_NE(p, nullptr);
  MemoryStats stats = dry.stats();
  EXPECT_EQ(stats.num_alloc_retries, 1u);
  EXPECT_EQ(stats.num_ooms, 0u);
  EXPECT_EQ(stats.reserved.current, i64(30_MiB));
  EXPECT_EQ(dry.count(EventKind::segment_unmap), 1u);
}
TEST(Retry, SegmentsInUseAreKept) {
  DryAllocator dry(with_budget(40_MiB));
  void* live = dry.allocator.allocate(20_MiB);
  EXPECT_THROW(dry.allocator.allocate(30_MiB), OomError);
  EXPECT_EQ(dry.stats().num_alloc_retries, 1u);
  EXPECT_EQ(dry.allocator.block_size(live), 20_MiB);
}

// ---- empty_cache ----
TEST(EmptyCache, ReturnsOnlyFullyFreeSegments) {
  DryAllocator dry;
  void* keep = dry.allocator.allocate(4_MiB);
  void* drop = dry.allocator.allocate(12_MiB);
  void* partly = dry.allocator.allocate(4_MiB);  // shares keep's 20 MiB segment
  dry.allocator.deallocate(drop);
  dry.allocator.deallocate(partly);
  dry.allocator.empty_cache();
  MemoryStats stats = dry.stats();
  EXPECT_EQ(stats.reserved.current, i64(20_MiB));
  EXPECT_EQ(stats.segments.current, 1);
  EXPECT_EQ(stats.num_empty_cache, 1u);
  dry.allocator.deallocate(keep);
  dry.allocator.empty_cache();
  EXPECT_EQ(dry.stats().reserved.current, 0);
  EXPECT_EQ(dry.stats().segments.current, 0);
}

// ---- API misuse ----
TEST(Misuse, UnknownPointerThrows) {
  DryAllocator dry;
  int local = 0;
  EXPECT_THROW(dry.allocator.deallocate(&local), std::invalid_argument);
  EXPECT_THROW(dry.allocator.block_size(&local), std::invalid_argument);
  EXPECT_THROW(dry.allocator.record_stream(&local, 3), std::invalid_argument);
}
TEST(Misuse, DoubleFreeThrows) {
  DryAllocator dry;
  void* p = dry.allocator.allocate(1_KiB);
  dry.allocator.deallocate(p);
  EXPECT_THROW(dry.allocator.deallocate(p), std::invalid_argument);
}
TEST(Misuse, NullFreeIsANoOp) {
  DryAllocator dry;
  EXPECT_NO_THROW(dry.allocator.deallocate(nullptr));
}

}  // namespace
}  // namespace oomlab::memory
