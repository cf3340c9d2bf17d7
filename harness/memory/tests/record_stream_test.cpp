// record_stream: a block used on another stream is reused only after that stream's events.
#include <gtest/gtest.h>

#include "harness/memory/caching_allocator.hpp"
#include "harness/memory/size.hpp"
#include "test_sources.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;
using testing::ManualEventSource;

constexpr StreamHandle kCompute = 0;
constexpr StreamHandle kCopy = 7;

// A 4 MiB block allocated on the compute stream, recorded as used on `stream`, then freed: what
// each test then expects of its reuse.
void* freed_after_use_on(CachingAllocator& allocator, StreamHandle stream) {
  void* p = allocator.allocate(4_MiB, Tag::data, kCompute);
  allocator.record_stream(p, stream);
  allocator.deallocate(p);
  return p;
}

TEST(RecordStream, FreedBlockWaitsForTheOtherStream) {
  ManualEventSource source(make_dry_source());
  CachingAllocator allocator(source, AllocatorConfig{});
  void* p = freed_after_use_on(allocator, kCopy);
  EXPECT_EQ(source.live_events(), 1u);
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.allocated.current, 0);
  EXPECT_EQ(stats.active.current, static_cast<std::int64_t>(4_MiB));  // still in flight

  void* q = allocator.allocate(4_MiB, Tag::data, kCompute);
  EXPECT_NE(q, p) << "reused while the copy stream may still read it";

  source.complete_all();
  allocator.deallocate(q);
  void* r = allocator.allocate(4_MiB, Tag::data, kCompute);
  EXPECT_EQ(r, p);
  EXPECT_EQ(source.live_events(), 0u);
  EXPECT_EQ(allocator.stats().active.current, static_cast<std::int64_t>(4_MiB));
  allocator.deallocate(r);
}

TEST(RecordStream, OwnStreamNeedsNoEvent) {
  ManualEventSource source(make_dry_source());
  CachingAllocator allocator(source, AllocatorConfig{});
  void* p = freed_after_use_on(allocator, kCompute);
  EXPECT_EQ(source.events_recorded(), 0u);
  EXPECT_EQ(allocator.allocate(4_MiB, Tag::data, kCompute), p);
}

TEST(RecordStream, OneEventPerOtherStream) {
  ManualEventSource source(make_dry_source());
  CachingAllocator allocator(source, AllocatorConfig{});
  void* p = allocator.allocate(1_KiB, Tag::data, kCompute);
  allocator.record_stream(p, 3);
  allocator.record_stream(p, 4);
  allocator.record_stream(p, 3);
  allocator.deallocate(p);
  EXPECT_EQ(source.events_recorded(), 2u);
  source.complete_all();
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().reserved.current, 0);
}

TEST(RecordStream, EmptyCacheWaitsForEventsThenReleases) {
  ManualEventSource source(make_dry_source(), /*auto_complete_after=*/3);
  CachingAllocator allocator(source, AllocatorConfig{});
  freed_after_use_on(allocator, kCopy);
  allocator.empty_cache();
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.reserved.current, 0);
  EXPECT_EQ(stats.active.current, 0);
  EXPECT_EQ(source.live_events(), 0u);
}

}  // namespace
}  // namespace oomlab::memory
