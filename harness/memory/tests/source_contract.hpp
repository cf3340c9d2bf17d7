// The contract every MemorySource keeps, as one value-parameterised suite. Each executable
// instantiates it with its sources (host and dry here; cuda and cuda_vmm in the GPU executable).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/memory/caching_allocator.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory::testing {

struct SourceCase {
  std::string name;
  std::function<std::unique_ptr<MemorySource>()> make;
  std::function<bool()> usable;  // false: the case is skipped (no GPU), never passed
  friend std::ostream& operator<<(std::ostream& os, const SourceCase& c) { return os << c.name; }
};

class SourceContract : public ::testing::TestWithParam<SourceCase> {
 protected:
  void SetUp() override {
    if (!GetParam().usable()) GTEST_SKIP() << "no usable CUDA device";
    source_ = GetParam().make();
  }
  std::unique_ptr<MemorySource> source_;
};

inline std::string source_case_name(const ::testing::TestParamInfo<SourceCase>& info) {
  return info.param.name;
}

TEST_P(SourceContract, NameMatches) { EXPECT_EQ(source_->name(), GetParam().name); }

TEST_P(SourceContract, SegmentsAreDistinctAlignedAndDoNotOverlap) {
  using namespace oomlab::literals;
  std::vector<std::pair<std::uintptr_t, std::size_t>> segments;
  for (std::size_t bytes : {2_MiB, 20_MiB, 2_MiB, 12_MiB}) {
    void* p = source_->allocate(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u) << "cudaMalloc's alignment at least";
    segments.emplace_back(reinterpret_cast<std::uintptr_t>(p), bytes);
  }
  std::sort(segments.begin(), segments.end());
  for (std::size_t i = 1; i < segments.size(); ++i) {
    EXPECT_LE(segments[i - 1].first + segments[i - 1].second, segments[i].first);
  }
  for (auto [address, bytes] : segments) source_->deallocate(reinterpret_cast<void*>(address), bytes);
}

TEST_P(SourceContract, HostBackedMemoryIsWritable) {
  if (!source_->has_backing() || source_->name() != "host") GTEST_SKIP() << "not host-addressable";
  using namespace oomlab::literals;
  auto* p = static_cast<unsigned char*>(source_->allocate(2_MiB));
  ASSERT_NE(p, nullptr);
  std::memset(p, 0xA5, 2_MiB);
  EXPECT_EQ(p[2_MiB - 1], 0xA5);
  source_->deallocate(p, 2_MiB);
}

TEST_P(SourceContract, ExpandableReserveMapUnmapRelease) {
  if (!source_->supports_expandable()) GTEST_SKIP() << source_->name() << " has no expandable segments";
  std::size_t page = source_->page_granularity();
  ASSERT_GT(page, 0u);
  EXPECT_EQ(page & (page - 1), 0u) << "a power of two";
  std::size_t reservation = 64 * page;
  auto* base = static_cast<char*>(source_->reserve(reservation));
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(base) % page, 0u);
  ASSERT_TRUE(source_->map(base, 3 * page));
  ASSERT_TRUE(source_->map(base + 3 * page, page));
  if (source_->name() == "host") {
    std::memset(base, 1, 4 * page);  // mapped host pages are usable
    EXPECT_EQ(base[4 * page - 1], 1);
  }
  source_->unmap(base + 2 * page, 2 * page);  // the tail, in a different split than mapped
  source_->unmap(base, 2 * page);
  ASSERT_TRUE(source_->map(base, page));      // and mapped again
  source_->unmap(base, page);
  source_->release(base, reservation);
}

TEST_P(SourceContract, EventsOnTheDefaultStreamComplete) {
  EventHandle event = source_->record_event(0);
  bool complete = false;
  for (int i = 0; i < 1000000 && !complete; ++i) complete = source_->event_complete(event);
  EXPECT_TRUE(complete);
  source_->destroy_event(event);
}

TEST_P(SourceContract, ExternalBytesNeverUnderflow) {
  // Host and dry cannot know; cuda reports the context and other processes (far below 2^60).
  EXPECT_LT(source_->external_bytes(), std::size_t{1} << 60);
}

TEST_P(SourceContract, CachingAllocatorRoundTrip) {
  using namespace oomlab::literals;
  for (bool expandable : {false, true}) {
    AllocatorConfig config;
    config.expandable_segments = expandable;
    CachingAllocator allocator(*source_, config);
    std::vector<void*> blocks;
    for (std::size_t bytes : {1_KiB, 700_KiB, 3_MiB, 24_MiB}) blocks.push_back(allocator.allocate(bytes));
    for (void* p : blocks) allocator.deallocate(p);
    allocator.empty_cache();
    MemoryStats stats = allocator.stats();
    EXPECT_EQ(stats.reserved.current, 0) << (expandable ? "expandable" : "segments");
    EXPECT_EQ(stats.allocated.peak, static_cast<std::int64_t>(1_KiB + 700_KiB + 3_MiB + 24_MiB));
  }
}

}  // namespace oomlab::memory::testing
