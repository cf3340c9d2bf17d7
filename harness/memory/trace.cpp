// The bounded event log and its Chrome-trace / Perfetto exporter.
#include "harness/memory/trace.hpp"

#include <nlohmann/json.hpp>

namespace oomlab::memory {

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::alloc: return "alloc";
    case EventKind::free: return "free";
    case EventKind::segment_map: return "segment_map";
    case EventKind::segment_unmap: return "segment_unmap";
    case EventKind::oom: return "oom";
    case EventKind::empty_cache: return "empty_cache";
    case EventKind::step: return "step";
  }
  return "unknown";
}

bool TraceEvent::same_as(const TraceEvent& other) const {
  return kind == other.kind && sequence == other.sequence && bytes == other.bytes &&
         segment == other.segment && offset == other.offset && tag == other.tag &&
         step == other.step && allocated_after == other.allocated_after &&
         reserved_after == other.reserved_after && tag_allocated_after == other.tag_allocated_after;
}

void Trace::record(TraceEvent event) {
  // Per-tag bytes are tracked here, not read from the events kept, so they stay right after
  // the oldest events are dropped.
  auto& tag_bytes = tag_bytes_[static_cast<int>(event.tag)];
  if (event.kind == EventKind::alloc) tag_bytes += static_cast<std::int64_t>(event.bytes);
  if (event.kind == EventKind::free) tag_bytes -= static_cast<std::int64_t>(event.bytes);
  event.tag_allocated_after = tag_bytes;
  event.sequence = next_sequence_++;
  if (capacity_ == 0) {
    ++dropped_;
    return;
  }
  if (events_.size() == capacity_) {
    events_.pop_front();
    ++dropped_;
  }
  events_.push_back(event);
}

nlohmann::json Trace::to_chrome_json() const {
  using nlohmann::json;
  json events = json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1},
                    {"args", {{"name", "oomlab allocator"}}}});
  for (const TraceEvent& e : events_) {
    json args = {{"bytes", e.bytes}, {"segment", e.segment}, {"offset", e.offset},
                 {"tag", tag_name(e.tag)}, {"sequence", e.sequence}};
    if (e.kind == EventKind::step) args["step"] = e.step;
    events.push_back({{"name", event_kind_name(e.kind)}, {"ph", "i"}, {"s", "p"}, {"pid", 1},
                      {"tid", e.stream}, {"ts", e.time_us}, {"args", std::move(args)}});
    events.push_back({{"name", "allocated"}, {"ph", "C"}, {"pid", 1}, {"ts", e.time_us},
                      {"args", {{"bytes", e.allocated_after}}}});
    events.push_back({{"name", "reserved"}, {"ph", "C"}, {"pid", 1}, {"ts", e.time_us},
                      {"args", {{"bytes", e.reserved_after}}}});
    if (e.kind == EventKind::alloc || e.kind == EventKind::free) {
      events.push_back({{"name", std::string("tag ") + tag_name(e.tag)}, {"ph", "C"}, {"pid", 1},
                        {"ts", e.time_us}, {"args", {{"bytes", e.tag_allocated_after}}}});
    }
  }
  return json{{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ms"},
              {"otherData", {{"dropped_events", dropped_}, {"capacity", capacity_}}}};
}

}  // namespace oomlab::memory
