#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "allocator_fixture.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;
using testing::DryAllocator;

TraceEvent alloc_event(std::size_t bytes, Tag tag) {
  TraceEvent e;
  e.kind = EventKind::alloc;
  e.bytes = bytes;
  e.tag = tag;
  return e;
}

TEST(Trace, KeepsTheNewestEventsAndCountsTheDropped) {
  Trace trace(4);
  for (int i = 0; i < 10; ++i) trace.record(alloc_event(512, Tag::data));
  ASSERT_EQ(trace.events().size(), 4u);
  EXPECT_EQ(trace.dropped(), 6u);
  EXPECT_EQ(trace.events().front().sequence, 6u);
  EXPECT_EQ(trace.events().back().sequence, 9u);
  // Per-tag bytes count the dropped events too.
  EXPECT_EQ(trace.events().back().tag_allocated_after, 10 * 512);
}

TEST(Trace, ZeroCapacityKeepsNothing) {
  Trace trace(0);
  trace.record(alloc_event(512, Tag::data));
  EXPECT_TRUE(trace.events().empty());
  EXPECT_EQ(trace.dropped(), 1u);
}

TEST(Trace, SameAsIgnoresTimeAndStream) {
  TraceEvent a = alloc_event(1024, Tag::grads);
  TraceEvent b = a;
  b.time_us = 99;
  b.stream = 3;
  EXPECT_TRUE(a.same_as(b));
  b.offset = 512;
  EXPECT_FALSE(a.same_as(b));
}

TEST(Trace, AllocatorRecordsEveryKindOfEvent) {
  AllocatorConfig config;
  config.budget = 30_MiB;
  DryAllocator dry(config);
  dry.allocator.mark_step(0);
  void* p = dry.allocator.allocate(4_MiB, Tag::weights, 0);
  EXPECT_THROW(dry.allocator.allocate(40_MiB), OomError);
  dry.allocator.deallocate(p);
  dry.allocator.empty_cache();
  std::vector<EventKind> kinds;
  for (const TraceEvent& e : dry.allocator.trace().events()) kinds.push_back(e.kind);
  std::vector<EventKind> expected = {EventKind::step, EventKind::segment_map, EventKind::alloc,
                                     EventKind::oom, EventKind::free, EventKind::segment_unmap,
                                     EventKind::empty_cache};
  EXPECT_EQ(kinds, expected);
  const TraceEvent& alloc = dry.allocator.trace().events()[2];
  EXPECT_EQ(alloc.bytes, 4_MiB);
  EXPECT_EQ(alloc.segment, 0u);
  EXPECT_EQ(alloc.offset, 0u);
  EXPECT_EQ(alloc.allocated_after, static_cast<std::int64_t>(4_MiB));
  EXPECT_EQ(alloc.reserved_after, static_cast<std::int64_t>(20_MiB));
  EXPECT_EQ(dry.allocator.trace().events()[0].step, 0);
}

TEST(Trace, ChromeJsonHasInstantEventsAndCounterTracks) {
  DryAllocator dry;
  void* w = dry.allocator.allocate(4_MiB, Tag::weights, 0);
  void* a = dry.allocator.allocate(1_MiB, Tag::activations, 0);
  dry.allocator.deallocate(a);
  nlohmann::json json = dry.allocator.trace().to_chrome_json();
  // A valid Chrome trace: an object with a traceEvents array, serialisable and parseable.
  nlohmann::json parsed = nlohmann::json::parse(json.dump());
  ASSERT_TRUE(parsed.contains("traceEvents"));
  ASSERT_TRUE(parsed["traceEvents"].is_array());
  std::set<std::string> counters, instants;
  for (const auto& e : parsed["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph"));
    ASSERT_TRUE(e.contains("name"));
    if (e["ph"] == "C") {
      counters.insert(e["name"].get<std::string>());
      EXPECT_TRUE(e["args"].contains("bytes"));
      EXPECT_TRUE(e.contains("ts"));
    }
    if (e["ph"] == "i") instants.insert(e["name"].get<std::string>());
  }
  for (const char* track : {"allocated", "reserved", "tag weights", "tag activations"}) {
    EXPECT_EQ(counters.count(track), 1u) << track;
  }
  for (const char* kind : {"alloc", "free", "segment_map"}) EXPECT_EQ(instants.count(kind), 1u) << kind;
  // The last activations counter is back at zero.
  std::int64_t last_activations = -1;
  for (const auto& e : parsed["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "tag activations") last_activations = e["args"]["bytes"];
  }
  EXPECT_EQ(last_activations, 0);
  dry.allocator.deallocate(w);
}

TEST(Trace, AllocatorRespectsTraceCapacity) {
  AllocatorConfig config;
  config.trace_capacity = 8;
  DryAllocator dry(config);
  for (int i = 0; i < 100; ++i) dry.allocator.deallocate(dry.allocator.allocate(1_KiB));
  EXPECT_EQ(dry.allocator.trace().events().size(), 8u);
  EXPECT_EQ(dry.allocator.trace().dropped(), 201u - 8u);  // 1 segment map + 200 alloc/free
}

}  // namespace
}  // namespace oomlab::memory
