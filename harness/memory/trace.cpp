// The bounded event log. Its Chrome-trace export is in trace_export.cpp.
#include "harness/memory/trace.hpp"

#include <atomic>

#include "harness/memory/site.hpp"

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
         reserved_after == other.reserved_after && tag_allocated_after == other.tag_allocated_after &&
         site == other.site;
}

std::uint32_t Trace::intern_site(std::string site) {
  if (site.empty()) return 0;
  auto [it, added] = site_ids_.emplace(std::move(site), static_cast<std::uint32_t>(sites_.size()));
  if (added) sites_.push_back(it->first);
  return it->second;
}

const std::string& Trace::site_name(std::uint32_t site) const {
  return site < sites_.size() ? sites_[site] : sites_.front();
}

void Trace::record(TraceEvent event) {
  // Per-tag bytes are tracked here, not read from the events kept, so they stay right after
  // the oldest events are dropped.
  auto& tag_bytes = tag_bytes_[static_cast<int>(event.tag)];
  if (event.kind == EventKind::alloc) tag_bytes += static_cast<std::int64_t>(event.bytes);
  if (event.kind == EventKind::free) tag_bytes -= static_cast<std::int64_t>(event.bytes);
  event.tag_allocated_after = tag_bytes;
  event.sequence = next_sequence_++;
  if (event.kind == EventKind::alloc || event.kind == EventKind::oom) event.site = intern_site(current_site());
  ++counts_[static_cast<int>(event.kind)];
  if (event.kind == EventKind::segment_map || event.kind == EventKind::segment_unmap ||
      event.kind == EventKind::oom || event.kind == EventKind::step) {
    if (auto observer = std::atomic_load(&observer_)) (*observer)(event);
  }
  if (capacity_ == 0) {
    state_before_.apply(event);
    ++dropped_;
    return;
  }
  if (events_.size() == capacity_) {
    state_before_.apply(events_.front());
    events_.pop_front();
    ++dropped_;
  }
  events_.push_back(event);
}

TraceState Trace::state() const {
  TraceState state = state_before_;
  for (const TraceEvent& event : events_) state.apply(event);
  return state;
}

std::string Trace::dropped_note() const {
  if (dropped_ == 0) return "";
  std::size_t enough = 1;
  while (enough < next_sequence_) enough *= 2;
  return "trace kept the last " + std::to_string(events_.size()) + " of " + std::to_string(next_sequence_) +
         " allocator events (" + std::to_string(dropped_) + " earliest dropped); keep them all with " +
         "OOMLAB_ALLOC_CONF=trace_capacity:" + std::to_string(enough);
}

void Trace::set_observer(Observer observer) const {
  std::shared_ptr<const Observer> next = observer ? std::make_shared<const Observer>(std::move(observer)) : nullptr;
  std::atomic_store(&observer_, std::move(next));
}

}  // namespace oomlab::memory
