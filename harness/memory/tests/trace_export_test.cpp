// The trace as files: block slices with tag and site, the logical time axis on dry, dropped
// events (their note and the state they leave), the observer, trace_capacity, and the OOM dump.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "allocator_fixture.hpp"
#include "harness/memory/site.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/trace_export.hpp"

namespace oomlab::memory {
namespace {

using namespace oomlab::literals;
using nlohmann::json;
using testing::DryAllocator;

std::vector<json> of_phase(const json& trace, const std::string& phase) {
  std::vector<json> events;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == phase) events.push_back(e);
  }
  return events;
}

TEST(TraceExport, EveryBlockIsASliceWithItsTagSiteAndLifetime) {
  DryAllocator dry;
  void* weights = dry.allocator.allocate(4_MiB, Tag::weights, 0);
  void* scores = nullptr;
  {
    SiteScope forward("forward");
    SiteScope attention("attention scores");
    scores = dry.allocator.allocate(2_MiB, Tag::activations, 0);
  }
  void* other = dry.allocator.allocate(2_MiB, Tag::activations, 0);
  dry.allocator.deallocate(scores);
  const json trace = json::parse(chrome_trace(dry.allocator).dump());
  const auto slices = of_phase(trace, "X");
  ASSERT_EQ(slices.size(), 3u);
  std::map<std::string, json> by_name;
  for (const json& s : slices) by_name[s["name"].get<std::string>()] = s;
  ASSERT_TRUE(by_name.count("2.00MiB forward \xE2\x80\xBA attention scores")) << slices[1].dump();
  const json& scores_slice = by_name["2.00MiB forward \xE2\x80\xBA attention scores"];
  EXPECT_EQ(scores_slice["cat"], "activations");
  EXPECT_EQ(scores_slice["args"]["site"], "forward \xE2\x80\xBA attention scores");
  EXPECT_TRUE(scores_slice["args"]["freed"].get<bool>());
  // Logical time on dry: the alloc was event 2 (after the segment map and the weights), the free event 4.
  EXPECT_EQ(scores_slice["ts"], 2.0);
  EXPECT_EQ(scores_slice["dur"], 2.0);
  EXPECT_FALSE(by_name["4.00MiB weights"]["args"]["freed"].get<bool>());
  // Two live activations at once: two lanes, so slices of one track never overlap.
  EXPECT_NE(scores_slice["tid"], by_name["2.00MiB activations"]["tid"]);
  std::set<std::string> lanes;
  for (const json& m : of_phase(trace, "M")) {
    if (m["name"] == "thread_name") lanes.insert(m["args"]["name"].get<std::string>());
  }
  EXPECT_EQ(lanes, (std::set<std::string>{"weights #0", "activations #0", "activations #1"}));
  EXPECT_EQ(trace["otherData"]["time_axis"], "logical: 1 us = 1 allocator event");
  dry.allocator.deallocate(weights);
  dry.allocator.deallocate(other);
}

TEST(TraceExport, WallClockWhereMemoryIsReal) {
  auto host = make_host_source();
  CachingAllocator allocator(*host, {});
  EXPECT_EQ(natural_time_axis(allocator), TimeAxis::wall);
  DryAllocator dry;
  EXPECT_EQ(natural_time_axis(dry.allocator), TimeAxis::logical);
}

TEST(TraceExport, DroppedEventsLeaveTheirStateAndANote) {
  AllocatorConfig config;
  config.trace_capacity = 5;
  DryAllocator dry(config);
  std::vector<void*> live;
  for (int i = 0; i < 6; ++i) live.push_back(dry.allocator.allocate(2_MiB + i * 512, Tag::grads, 0));
  dry.allocator.deallocate(live[0]);
  const Trace& trace = dry.allocator.trace();
  ASSERT_EQ(trace.dropped(), 3u);  // 8 events (a segment map, 6 allocs, a free), 5 kept
  EXPECT_EQ(trace.recorded(), 8u);
  EXPECT_EQ(trace.counts()[static_cast<int>(EventKind::alloc)], 6u);
  std::map<std::string, double> metrics;
  add_event_counts(trace, metrics);
  EXPECT_EQ(metrics["events.alloc"], 6);
  EXPECT_EQ(metrics["events.free"], 1);
  EXPECT_EQ(metrics["events.segment_map"], 1);
  EXPECT_EQ(metrics.size(), 7u);
  EXPECT_EQ(trace.dropped_note(),
            "trace kept the last 5 of 8 allocator events (3 earliest dropped); keep them all with "
            "OOMLAB_ALLOC_CONF=trace_capacity:8");
  // The state before the kept events plus the kept events is the allocator's state now.
  const TraceState now = trace.state();
  EXPECT_EQ(now.blocks().size(), 5u);
  EXPECT_EQ(now.allocated(), static_cast<std::size_t>(dry.stats().allocated.current));
  EXPECT_EQ(now.reserved(), static_cast<std::size_t>(dry.stats().reserved.current));
  EXPECT_EQ(trace.state_before_events().blocks().size(), 2u);
  // The freed block allocated before the window is a slice that starts with the window.
  const json exported = trace.to_chrome_json(TimeAxis::logical);
  bool found = false;
  for (const json& s : of_phase(exported, "X")) {
    if (s["args"].contains("allocated_before_these_events")) found = found || s["args"]["freed"].get<bool>();
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(exported["otherData"]["dropped_events"], 3);
  for (std::size_t i = 1; i < live.size(); ++i) dry.allocator.deallocate(live[i]);
}

TEST(TraceExport, ObserverSeesSegmentStepAndOomEventsOnly) {
  AllocatorConfig config;
  config.budget = 30_MiB;
  DryAllocator dry(config);
  std::vector<EventKind> seen;
  dry.allocator.trace().set_observer([&](const TraceEvent& e) { seen.push_back(e.kind); });
  dry.allocator.mark_step(0);
  void* p = dry.allocator.allocate(4_MiB, Tag::weights, 0);
  EXPECT_THROW(dry.allocator.allocate(40_MiB), OomError);
  dry.allocator.deallocate(p);
  dry.allocator.empty_cache();
  dry.allocator.trace().set_observer(nullptr);
  dry.allocator.mark_step(1);
  EXPECT_EQ(seen, (std::vector<EventKind>{EventKind::step, EventKind::segment_map, EventKind::oom,
                                          EventKind::segment_unmap}));
}

TEST(TraceExport, TraceCapacityIsAnAllocConfKey) {
  EXPECT_EQ(parse_alloc_conf("trace_capacity:1048576").trace_capacity, 1048576u);
  EXPECT_EQ(parse_alloc_conf("trace_capacity:0").trace_capacity, 0u);
  AllocatorConfig config = parse_alloc_conf("expandable_segments:true,trace_capacity:100");
  EXPECT_EQ(config.to_string(), "expandable_segments:true,trace_capacity:100");
  EXPECT_EQ(AllocatorConfig{}.to_string(), "expandable_segments:false") << "the default is not spelt out";
  for (const char* bad : {"trace_capacity:", "trace_capacity:-1", "trace_capacity:1e6", "trace_capacity:99999999999"}) {
    try {
      parse_alloc_conf(bad);
      ADD_FAILURE() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("trace_capacity"), std::string::npos) << e.what();
    }
  }
}

TEST(TraceExport, OomDumpHoldsTheLastEventsAndEverySegment) {
  AllocatorConfig config;
  config.budget = 64_MiB;
  DryAllocator dry(config);
  std::vector<void*> live;
  for (int i = 0; i < 20; ++i) live.push_back(dry.allocator.allocate(2_MiB, Tag::activations, 0));
  for (int i = 0; i < 20; i += 2) dry.allocator.deallocate(live[i]);
  std::string message;
  try {
    dry.allocator.allocate(50_MiB, Tag::activations, 0);
  } catch (const OomError& e) {
    message = e.what();
  }
  ASSERT_FALSE(message.empty());
  const json dump = json::parse(oom_dump(dry.allocator, message, 10).dump());
  ASSERT_TRUE(dump.contains("traceEvents")) << "a Chrome trace, so Perfetto opens it";
  EXPECT_EQ(of_phase(dump, "i").size(), 10u);
  const json& oom = dump["otherData"]["oom"];
  EXPECT_EQ(oom["message"], message);
  EXPECT_NE(oom["memory_summary"].get<std::string>().find("Allocated memory"), std::string::npos);
  ASSERT_EQ(oom["segments"].size(), 2u);  // two 20 MiB segments
  const json& first = oom["segments"][0];
  EXPECT_EQ(first["mapped"], 20_MiB);
  EXPECT_EQ(first["blocks"].size(), 5u);  // every other of ten 2 MiB blocks
  EXPECT_EQ(first["free"], 10_MiB);
  EXPECT_EQ(first["largest_free"], 2_MiB) << "free space in pieces: fragmentation";
  for (int i = 1; i < 20; i += 2) dry.allocator.deallocate(live[i]);
}

}  // namespace
}  // namespace oomlab::memory
