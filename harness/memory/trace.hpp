// A bounded log of allocator events, exportable as Chrome-trace / Perfetto JSON.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "harness/memory/source.hpp"
#include "harness/memory/tags.hpp"

namespace oomlab::memory {

enum class EventKind { alloc, free, segment_map, segment_unmap, oom, empty_cache, step };
const char* event_kind_name(EventKind kind);

// Positions are (segment id, offset) rather than addresses, so the same program produces the
// same event sequence on every source: the dry-vs-host identity test compares these.
struct TraceEvent {
  EventKind kind = EventKind::alloc;
  std::uint64_t sequence = 0;
  double time_us = 0;            // since the allocator was made; excluded from comparisons
  std::size_t bytes = 0;
  std::uint32_t segment = 0;
  std::size_t offset = 0;
  Tag tag = Tag::other;
  StreamHandle stream = 0;
  std::int64_t step = -1;        // for step marks
  std::int64_t allocated_after = 0;
  std::int64_t reserved_after = 0;
  std::int64_t tag_allocated_after = 0;  // bytes of `tag` after an alloc/free (set by Trace)
  bool same_as(const TraceEvent& other) const;  // everything but time and stream
};

class Trace {
 public:
  explicit Trace(std::size_t capacity) : capacity_(capacity) {}
  // Assigns the sequence number and tag_allocated_after; drops the oldest event when full.
  void record(TraceEvent event);
  const std::deque<TraceEvent>& events() const { return events_; }
  std::uint64_t dropped() const { return dropped_; }
  std::size_t capacity() const { return capacity_; }
  // Chrome trace: instant events per alloc/free/oom, counter tracks "allocated", "reserved"
  // and one per tag.
  nlohmann::json to_chrome_json() const;

 private:
  std::size_t capacity_;
  std::deque<TraceEvent> events_;
  std::uint64_t dropped_ = 0;
  std::uint64_t next_sequence_ = 0;
  std::array<std::int64_t, kTagCount> tag_bytes_{};
};

}  // namespace oomlab::memory
