// One test per edge of the settings PyTorch documents beyond the basic rules
// (c10/cuda/CUDAAllocatorConfig.h): roundup_power2_divisions, max_non_split_rounding_mb,
// garbage_collection_threshold, the oversize release before the last retry, release order, and
// the no-caching mode (PYTORCH_NO_CUDA_MEMORY_CACHING).
#include <gtest/gtest.h>

#include <vector>

#include "allocator_fixture.hpp"
#include "harness/memory/alloc_rounding.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;
using testing::DryAllocator;

std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

RoundupTable all(std::size_t divisions) {
  RoundupTable table;
  table.fill(divisions);
  return table;
}

// ---- roundup_power2_divisions ----
TEST(RoundupTable, NextDivisionOfThePowerOfTwo) {
  EXPECT_EQ(roundup_power2_next_division(1200, 4), 1280u);  // PyTorch's own example
  EXPECT_EQ(roundup_power2_next_division(1280, 4), 1280u);  // already on a division
  EXPECT_EQ(roundup_power2_next_division(2048, 4), 2048u);  // powers of two stay
  EXPECT_EQ(roundup_power2_next_division(1_GiB + 1, 4), 1_GiB + 256_MiB);
}

TEST(RoundupTable, OnlyAboveFiveHundredTwelveBytesTimesTheDivisions) {
  EXPECT_EQ(round_request(1000, all(4)), 1024u);  // 1000 <= 2048: plain 512-byte rounding
  EXPECT_EQ(round_request(3000, all(4)), 3072u);  // quarters of 2048: 2560, 3072
  EXPECT_EQ(round_request(100, all(4)), 512u);
  EXPECT_EQ(round_request(3000, RoundupTable{}), 3072u);
  EXPECT_EQ(round_request(5000, RoundupTable{}), 5120u);  // off: 512-byte steps
  EXPECT_EQ(round_request(5000, all(2)), 6144u);              // halves of 4096
}

TEST(RoundupTable, EachPowerOfTwoIntervalFromOneMiBHasItsOwnEntry) {
  RoundupTable table{};
  table[0] = 2;   // [1 MiB, 2 MiB) and everything smaller
  table[9] = 8;   // [512 MiB, 1 GiB)
  table[15] = 4;  // from 32 GiB up
  EXPECT_EQ(roundup_divisions_for(table, 4_KiB), 2u);
  EXPECT_EQ(roundup_divisions_for(table, 600_MiB), 8u);
  EXPECT_EQ(roundup_divisions_for(table, 200_GiB), 4u);
  EXPECT_EQ(roundup_divisions_for(table, 3_MiB), 0u);
  EXPECT_EQ(round_request(600_MiB + 1, table), 640_MiB);  // eighths of 512 MiB
}

TEST(RoundupTable, TheAllocatorRoundsRequestsWithThem) {
  AllocatorConfig config;
  config.roundup_power2_divisions = all(4);
  DryAllocator dry(config);
  EXPECT_EQ(dry.allocator.block_size(dry.allocator.allocate(1_GiB + 1)), 1_GiB + 256_MiB);
  EXPECT_EQ(dry.stats().requested.current, i64(1_GiB + 1));
}

// ---- max_non_split_rounding_mb ----
// A cached 100 MiB oversize block for a 60 MiB request wastes 40 MiB: over the default 20 MiB.
AllocatorConfig oversize(std::size_t non_split_rounding) {
  AllocatorConfig config;
  config.max_split_size = 20_MiB;
  config.max_non_split_rounding = non_split_rounding;
  return config;
}

TEST(MaxNonSplitRounding, DefaultRefusesAnOversizeBlockWastingTwentyMiBOrMore) {
  DryAllocator dry(oversize(20_MiB));
  dry.allocator.deallocate(dry.allocator.allocate(100_MiB));
  dry.allocator.allocate(60_MiB);
  EXPECT_EQ(dry.stats().segments.current, 2);  // a new segment
}

TEST(MaxNonSplitRounding, ALargerLimitLetsTheRequestTakeIt) {
  DryAllocator dry(oversize(64_MiB));
  dry.allocator.deallocate(dry.allocator.allocate(100_MiB));
  void* p = dry.allocator.allocate(60_MiB);
  EXPECT_EQ(dry.stats().segments.current, 1);
  EXPECT_EQ(dry.allocator.block_size(p), 100_MiB);  // oversize blocks are never split
}

// ---- release_available_cached_blocks ----
TEST(OversizeRelease, FreesTheSmallestOversizeBlockThatCoversTheRequestBeforeEverything) {
  AllocatorConfig config;
  config.max_split_size = 20_MiB;
  config.budget = 150_MiB;
  DryAllocator dry(config);
  void* big = dry.allocator.allocate(80_MiB);
  void* mid = dry.allocator.allocate(60_MiB);
  dry.allocator.deallocate(big);
  dry.allocator.deallocate(mid);
  // 30 MiB: the 60 MiB block would waste 30 MiB (>= 20), so a segment is needed; 140 + 30 is
  // over the budget; the 60 MiB block covers the request and goes, the 80 MiB one stays.
  dry.allocator.allocate(30_MiB);
  EXPECT_EQ(dry.sizes(EventKind::segment_unmap), std::vector<std::size_t>{60_MiB});
  EXPECT_EQ(dry.stats().reserved.current, i64(110_MiB));
  EXPECT_EQ(dry.stats().num_alloc_retries, 0u);  // the last-resort release was not needed
}

// ---- release order ----
TEST(ReleaseOrder, LargePoolFirstThenSmallEachBySize) {
  DryAllocator dry;
  void* small = dry.allocator.allocate(1_KiB);
  void* forty = dry.allocator.allocate(40_MiB);
  void* thirty = dry.allocator.allocate(30_MiB);
  for (void* p : {small, forty, thirty}) dry.allocator.deallocate(p);
  dry.allocator.empty_cache();
  EXPECT_EQ(dry.sizes(EventKind::segment_unmap), (std::vector<std::size_t>{30_MiB, 40_MiB, 2_MiB}));
}

// ---- garbage_collection_threshold ----
AllocatorConfig collecting(double threshold) {
  AllocatorConfig config = testing::with_budget(100_MiB);
  config.garbage_collection_threshold = threshold;
  return config;
}

TEST(GarbageCollection, ReleasesTheOldestCachedSegmentsOncePastTheThreshold) {
  DryAllocator dry(collecting(0.5));
  dry.allocator.deallocate(dry.allocator.allocate(24_MiB));  // cached first: older
  dry.allocator.deallocate(dry.allocator.allocate(30_MiB));  // cached one search later
  // 54 MiB reserved > 50 MiB: the 24 MiB segment is older than the average and goes; that is
  // enough, so the 30 MiB one stays cached.
  dry.allocator.allocate(40_MiB);
  EXPECT_EQ(dry.sizes(EventKind::segment_unmap), std::vector<std::size_t>{24_MiB});
  EXPECT_EQ(dry.stats().reserved.current, i64(70_MiB));
}

TEST(GarbageCollection, NothingBelowTheThreshold) {
  DryAllocator dry(collecting(0.9));
  dry.allocator.deallocate(dry.allocator.allocate(24_MiB));
  dry.allocator.deallocate(dry.allocator.allocate(30_MiB));
  dry.allocator.allocate(40_MiB);
  EXPECT_TRUE(dry.sizes(EventKind::segment_unmap).empty());
}

TEST(GarbageCollection, OnlyUnderABudgetAsPyTorchOnlyUnderAMemoryFraction) {
  AllocatorConfig config = collecting(0.5);
  config.budget = AllocatorConfig::kUnlimited;
  DryAllocator dry(config);
  dry.allocator.deallocate(dry.allocator.allocate(24_MiB));
  dry.allocator.deallocate(dry.allocator.allocate(30_MiB));
  dry.allocator.allocate(40_MiB);
  EXPECT_TRUE(dry.sizes(EventKind::segment_unmap).empty());
}

TEST(GarbageCollection, SplitSegmentsAreNeverCollected) {
  DryAllocator dry(collecting(0.1));
  void* live = dry.allocator.allocate(4_MiB);  // holds a piece of a 20 MiB segment
  dry.allocator.allocate(40_MiB);
  EXPECT_TRUE(dry.sizes(EventKind::segment_unmap).empty());
  EXPECT_NE(live, nullptr);
}

// ---- caching:false ----
AllocatorConfig uncached(std::size_t budget = AllocatorConfig::kUnlimited) {
  return testing::with_setting(&AllocatorConfig::caching, false, budget);
}

TEST(NoCaching, EveryRequestIsItsOwnSegmentReturnedWhenFreed) {
  DryAllocator dry(uncached());
  void* a = dry.allocator.allocate(1_KiB);
  void* b = dry.allocator.allocate(3_MiB);
  EXPECT_EQ(dry.stats().reserved.current, i64(1_KiB + 3_MiB));
  EXPECT_EQ(dry.stats().segments.current, 2);
  dry.allocator.deallocate(a);
  EXPECT_EQ(dry.stats().reserved.current, i64(3_MiB));
  dry.allocator.deallocate(b);
  EXPECT_EQ(dry.stats().reserved.current, 0);
  EXPECT_EQ(dry.allocator.check_consistency(), "");
}

TEST(NoCaching, ReservedEqualsAllocatedAtEveryEvent) {
  DryAllocator dry(uncached());
  std::vector<void*> blocks;
  for (std::size_t kib : {1, 700, 3000, 50000}) blocks.push_back(dry.allocator.allocate(kib * 1_KiB));
  dry.allocator.deallocate(blocks[1]);
  blocks.push_back(dry.allocator.allocate(200));
  for (const TraceEvent& e : dry.allocator.trace().events()) {
    if (e.kind == EventKind::alloc || e.kind == EventKind::segment_unmap) {
      EXPECT_EQ(e.allocated_after, e.reserved_after) << event_kind_name(e.kind);
    }
  }
  EXPECT_EQ(dry.stats().reserved.peak, dry.stats().allocated.peak);
}

TEST(NoCaching, NothingToReleaseSoTheBudgetIsAnOomAtOnce) {
  DryAllocator dry(uncached(4_MiB));
  dry.allocator.allocate(3_MiB);
  EXPECT_THROW(dry.allocator.allocate(2_MiB), OomError);
  EXPECT_EQ(dry.stats().num_alloc_retries, 0u);
  EXPECT_EQ(dry.allocator.check_consistency(), "");
}

}  // namespace
}  // namespace oomlab::memory
