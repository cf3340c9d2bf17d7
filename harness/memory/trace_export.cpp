// Chrome-trace / Perfetto JSON: pid 1 "oomlab allocator" holds an instant per event and the
// counter tracks; pid 2 "oomlab blocks" holds one slice per block (alloc -> free), on lanes per
// tag so slices of one thread never overlap (Perfetto needs them nested or apart).
#include "harness/memory/trace_export.hpp"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "harness/memory/caching_allocator.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {

namespace {

using nlohmann::json;

constexpr int kAllocatorPid = 1;
constexpr int kBlocksPid = 2;
constexpr int kLanesPerTag = 1 << 20;  // tid = tag * kLanesPerTag + lane

double timestamp(const TraceEvent& e, TimeAxis axis) {
  return axis == TimeAxis::logical ? static_cast<double>(e.sequence) : e.time_us;
}

struct Slice {
  double start = 0, end = 0;
  std::size_t bytes = 0;
  Tag tag = Tag::other;
  std::uint32_t site = 0, segment = 0;
  std::size_t offset = 0;
  std::uint64_t alloc_sequence = 0;
  bool allocated_before = false;  // its alloc is older than the events exported
  bool freed = false;
};

// Every block live at some point of events[first..]: paired alloc -> free.
std::vector<Slice> block_slices(const Trace& trace, const TraceState& before, TimeAxis axis, std::size_t first) {
  const auto& events = trace.events();
  const double window_start = first < events.size() ? timestamp(events[first], axis) : 0;
  const double window_end = events.empty() ? 0 : timestamp(events.back(), axis);
  std::vector<Slice> slices;
  std::map<TraceState::BlockKey, std::size_t> open;  // -> index in slices
  for (const auto& [key, block] : before.blocks()) {
    open[key] = slices.size();
    slices.push_back({window_start, window_end, block.bytes, block.tag, block.site, key.first, key.second,
                      block.sequence, true, false});
  }
  for (std::size_t i = first; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (e.kind == EventKind::alloc) {
      open[{e.segment, e.offset}] = slices.size();
      const double ts = timestamp(e, axis);
      slices.push_back({ts, window_end, e.bytes, e.tag, e.site, e.segment, e.offset, e.sequence, false, false});
    } else if (e.kind == EventKind::free) {
      auto it = open.find({e.segment, e.offset});
      if (it == open.end()) continue;
      slices[it->second].end = timestamp(e, axis);
      slices[it->second].freed = true;
      open.erase(it);
    }
  }
  return slices;
}

// First-fit lanes per tag; returns each slice's lane.
std::vector<int> assign_lanes(const std::vector<Slice>& slices) {
  std::vector<std::size_t> order(slices.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return slices[a].start < slices[b].start; });
  std::array<std::vector<double>, kTagCount> lane_end;
  std::vector<int> lane(slices.size(), 0);
  for (std::size_t i : order) {
    auto& ends = lane_end[static_cast<int>(slices[i].tag)];
    std::size_t l = 0;
    while (l < ends.size() && ends[l] > slices[i].start) ++l;
    if (l == ends.size()) ends.push_back(0);
    ends[l] = slices[i].end;
    lane[i] = static_cast<int>(l);
  }
  return lane;
}

void add_slices(json& out, const Trace& trace, const TraceState& before, TimeAxis axis, std::size_t first) {
  const std::vector<Slice> slices = block_slices(trace, before, axis, first);
  const std::vector<int> lanes = assign_lanes(slices);
  std::map<int, std::string> lane_names;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    const int tid = static_cast<int>(s.tag) * kLanesPerTag + lanes[i];
    lane_names.emplace(tid, std::string(tag_name(s.tag)) + " #" + std::to_string(lanes[i]));
    const std::string& site = trace.site_name(s.site);
    json args = {{"bytes", s.bytes}, {"tag", tag_name(s.tag)}, {"segment", s.segment}, {"offset", s.offset},
                 {"alloc_sequence", s.alloc_sequence}, {"freed", s.freed}};
    if (!site.empty()) args["site"] = site;
    if (s.allocated_before) args["allocated_before_these_events"] = true;
    out.push_back({{"name", format_size(s.bytes) + " " + (site.empty() ? tag_name(s.tag) : site)},
                   {"cat", tag_name(s.tag)}, {"ph", "X"}, {"pid", kBlocksPid}, {"tid", tid},
                   {"ts", s.start}, {"dur", s.end - s.start}, {"args", std::move(args)}});
  }
  for (const auto& [tid, name] : lane_names) {
    out.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", kBlocksPid}, {"tid", tid}, {"args", {{"name", name}}}});
    out.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", kBlocksPid}, {"tid", tid},
                   {"args", {{"sort_index", tid}}}});
  }
}

void add_event(json& out, const Trace& trace, const TraceEvent& e, TimeAxis axis) {
  const double ts = timestamp(e, axis);
  json args = {{"bytes", e.bytes}, {"segment", e.segment}, {"offset", e.offset}, {"tag", tag_name(e.tag)},
               {"sequence", e.sequence}, {"allocated", e.allocated_after}, {"reserved", e.reserved_after}};
  if (e.kind == EventKind::step) args["step"] = e.step;
  if (e.kind == EventKind::alloc || e.kind == EventKind::free) args["tag_bytes"] = e.tag_allocated_after;
  if (e.site != 0) args["site"] = trace.site_name(e.site);
  out.push_back({{"name", event_kind_name(e.kind)}, {"ph", "i"}, {"s", "p"}, {"pid", kAllocatorPid},
                 {"tid", e.stream}, {"ts", ts}, {"args", std::move(args)}});
  out.push_back({{"name", "allocated"}, {"ph", "C"}, {"pid", kAllocatorPid}, {"ts", ts},
                 {"args", {{"bytes", e.allocated_after}}}});
  out.push_back({{"name", "reserved"}, {"ph", "C"}, {"pid", kAllocatorPid}, {"ts", ts},
                 {"args", {{"bytes", e.reserved_after}}}});
  if (e.kind == EventKind::alloc || e.kind == EventKind::free) {
    out.push_back({{"name", std::string("tag ") + tag_name(e.tag)}, {"ph", "C"}, {"pid", kAllocatorPid},
                   {"ts", ts}, {"args", {{"bytes", e.tag_allocated_after}}}});
  }
}

TraceState state_at(const Trace& trace, std::size_t first) {
  TraceState state = trace.state_before_events();
  for (std::size_t i = 0; i < first && i < trace.events().size(); ++i) state.apply(trace.events()[i]);
  return state;
}

}  // namespace

json segments_json(const TraceState& state, const Trace& trace) {
  json segments = json::array();
  for (const auto& [id, segment] : state.segments()) {
    json blocks = json::array();
    std::size_t allocated = 0, largest_free = 0, cursor = 0;
    for (auto it = state.blocks().lower_bound({id, 0}); it != state.blocks().end() && it->first.first == id; ++it) {
      const BlockState& block = it->second;
      largest_free = std::max(largest_free, it->first.second > cursor ? it->first.second - cursor : 0);
      cursor = it->first.second + block.bytes;
      allocated += block.bytes;
      json entry = {{"offset", it->first.second}, {"bytes", block.bytes}, {"tag", tag_name(block.tag)},
                    {"sequence", block.sequence}};
      if (block.site != 0) entry["site"] = trace.site_name(block.site);
      blocks.push_back(std::move(entry));
    }
    largest_free = std::max(largest_free, segment.mapped > cursor ? segment.mapped - cursor : 0);
    segments.push_back({{"segment", id}, {"mapped", segment.mapped}, {"stream", segment.stream},
                        {"allocated", allocated}, {"free", segment.mapped - std::min(allocated, segment.mapped)},
                        {"largest_free", largest_free}, {"blocks", std::move(blocks)}});
  }
  return segments;
}

json chrome_json_from(const Trace& trace, TimeAxis axis, std::size_t first) {
  const TraceState before = state_at(trace, first);
  json events = json::array();
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", kAllocatorPid}, {"args", {{"name", "oomlab allocator"}}}});
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", kBlocksPid},
                    {"args", {{"name", "oomlab blocks (alloc -> free)"}}}});
  for (std::size_t i = first; i < trace.events().size(); ++i) add_event(events, trace, trace.events()[i], axis);
  add_slices(events, trace, before, axis, first);
  const std::uint64_t not_exported = trace.dropped() + first;
  return json{{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ms"},
              {"otherData",
               {{"capacity", trace.capacity()},
                {"recorded_events", trace.recorded()},
                {"dropped_events", not_exported},
                {"time_axis", axis == TimeAxis::logical ? "logical: 1 us = 1 allocator event" : "wall clock"},
                {"sites", trace.sites()},
                {"segments_before_events", segments_json(before, trace)}}}};
}

json Trace::to_chrome_json(TimeAxis axis) const { return chrome_json_from(*this, axis, 0); }

void add_event_counts(const Trace& trace, std::map<std::string, double>& metrics) {
  for (int kind = 0; kind < kEventKindCount; ++kind) {
    metrics[std::string("events.") + event_kind_name(static_cast<EventKind>(kind))] =
        static_cast<double>(trace.counts()[static_cast<std::size_t>(kind)]);
  }
}

TimeAxis natural_time_axis(CachingAllocator& allocator) {
  return allocator.source().has_backing() ? TimeAxis::wall : TimeAxis::logical;
}

json chrome_trace(CachingAllocator& allocator) {
  return allocator.trace().to_chrome_json(natural_time_axis(allocator));
}

json oom_dump(CachingAllocator& allocator, const std::string& message, std::size_t last_events) {
  const Trace& trace = allocator.trace();
  const std::size_t kept = trace.events().size();
  const std::size_t first = kept > last_events ? kept - last_events : 0;
  json dump = chrome_json_from(trace, natural_time_axis(allocator), first);
  dump["otherData"]["oom"] = {{"message", message},
                              {"memory_summary", allocator.memory_summary()},
                              {"segments", segments_json(trace.state(), trace)}};
  return dump;
}

}  // namespace oomlab::memory
