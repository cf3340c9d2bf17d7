#include <gtest/gtest.h>

#include <stdexcept>

#include "allocator_fixture.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;
using testing::DryAllocator;

TEST(Tags, NamesRoundTrip) {
  for (Tag tag : all_tags()) EXPECT_EQ(tag_from_name(tag_name(tag)), tag);
  EXPECT_FALSE(tag_from_name("nonsense").has_value());
}

TEST(Tags, ScopesNestAndRestore) {
  EXPECT_EQ(current_tag(), Tag::other);
  {
    TagScope weights(Tag::weights);
    EXPECT_EQ(current_tag(), Tag::weights);
    {
      TagScope grads(Tag::grads);
      EXPECT_EQ(current_tag(), Tag::grads);
    }
    EXPECT_EQ(current_tag(), Tag::weights);
  }
  EXPECT_EQ(current_tag(), Tag::other);
}

TEST(Counter, CurrentPeakTotal) {
  Counter c;
  c.increase(10);
  c.increase(5);
  c.decrease(12);
  c.increase(2);
  EXPECT_EQ(c.current, 5);
  EXPECT_EQ(c.peak, 15);
  EXPECT_EQ(c.total, 17);
  c.reset_peak();
  EXPECT_EQ(c.peak, 5);
}

TEST(AllocatorStats, AllocationsAreAttributedToTheCurrentTag) {
  DryAllocator dry;
  void* weights = nullptr;
  {
    TagScope scope(Tag::weights);
    weights = dry.allocator.allocate(3_MiB);
  }
  void* data = dry.allocator.allocate(1_MiB, Tag::data, 0);
  MemoryStats stats = dry.stats();
  EXPECT_EQ(stats.tag(Tag::weights).current, static_cast<std::int64_t>(3_MiB));
  EXPECT_EQ(stats.tag(Tag::data).current, static_cast<std::int64_t>(1_MiB));
  EXPECT_EQ(stats.largest_tag_current(), Tag::weights);
  dry.allocator.deallocate(weights);
  stats = dry.stats();
  EXPECT_EQ(stats.tag(Tag::weights).current, 0);
  EXPECT_EQ(stats.tag(Tag::weights).peak, static_cast<std::int64_t>(3_MiB));
  EXPECT_EQ(stats.largest_tag_current(), Tag::data);
  EXPECT_EQ(stats.largest_tag_peak(), Tag::weights);
  dry.allocator.deallocate(data);
}

TEST(AllocatorStats, NestedScopesSeeTheirOwnPeaks) {
  DryAllocator dry;
  void* base = dry.allocator.allocate(4_MiB, Tag::weights, 0);
  dry.allocator.push_scope();
  void* a = dry.allocator.allocate(8_MiB, Tag::activations, 0);
  dry.allocator.push_scope();
  dry.allocator.deallocate(a);
  void* b = dry.allocator.allocate(2_MiB, Tag::activations, 0);
  ScopeStats inner = dry.allocator.pop_scope();
  ScopeStats outer = dry.allocator.pop_scope();
  EXPECT_EQ(inner.peak_allocated, static_cast<std::int64_t>(12_MiB));  // the level at push
  EXPECT_EQ(outer.peak_allocated, static_cast<std::int64_t>(12_MiB));
  EXPECT_EQ(outer.peak_tag_allocated[static_cast<int>(Tag::activations)], static_cast<std::int64_t>(8_MiB));
  EXPECT_EQ(inner.peak_tag_allocated[static_cast<int>(Tag::activations)], static_cast<std::int64_t>(8_MiB));
  dry.allocator.push_scope();
  dry.allocator.deallocate(b);
  ScopeStats after = dry.allocator.pop_scope();
  EXPECT_EQ(after.peak_allocated, static_cast<std::int64_t>(6_MiB));
  EXPECT_THROW(dry.allocator.pop_scope(), std::logic_error);
  dry.allocator.deallocate(base);
}

TEST(AllocatorStats, ResetPeakStats) {
  DryAllocator dry;
  void* p = dry.allocator.allocate(8_MiB);
  dry.allocator.deallocate(p);
  dry.allocator.reset_peak_stats();
  MemoryStats stats = dry.stats();
  EXPECT_EQ(stats.allocated.peak, 0);
  EXPECT_EQ(stats.allocated.total, static_cast<std::int64_t>(8_MiB));
  EXPECT_EQ(stats.reserved.peak, stats.reserved.current);
}

TEST(AllocatorStats, MemorySummaryIsATable) {
  DryAllocator dry;
  void* p = dry.allocator.allocate(5_MiB, Tag::optimizer, 0);
  std::string summary = dry.allocator.memory_summary();
  for (const char* row : {"Allocated memory", "Reserved memory", "Active memory", "Requested memory",
                          "tag optimizer", "Largest free block", "Fragmentation", "OOMs"}) {
    EXPECT_NE(summary.find(row), std::string::npos) << row << "\n" << summary;
  }
  EXPECT_NE(summary.find("5.00MiB"), std::string::npos) << summary;
  EXPECT_NE(summary.find("20.00MiB"), std::string::npos) << summary;  // the segment
  dry.allocator.deallocate(p);
}

TEST(AllocatorStats, FragmentationRatio) {
  DryAllocator dry;
  void* a = dry.allocator.allocate(4_MiB);
  void* b = dry.allocator.allocate(4_MiB);
  dry.allocator.deallocate(a);
  // Free: 4 MiB at the front and 12 MiB at the back of one 20 MiB segment.
  MemoryStats stats = dry.stats();
  EXPECT_EQ(stats.largest_free_block, 12_MiB);
  EXPECT_DOUBLE_EQ(stats.fragmentation, 1.0 - 12.0 / 16.0);
  dry.allocator.deallocate(b);
  EXPECT_DOUBLE_EQ(dry.stats().fragmentation, 0.0);
}

}  // namespace
}  // namespace oomlab::memory
