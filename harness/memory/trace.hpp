// A bounded log of allocator events, exportable as Chrome-trace / Perfetto JSON (trace_export.hpp):
// counter tracks per tag, an instant per event, and one slice per block from its alloc to its free
// with its tag and site, like PyTorch's memory viewer. When full it drops the oldest events and
// counts them; the segments and blocks they left behind are kept (state_before_events), so the
// kept events still replay exactly.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "harness/memory/source.hpp"
#include "harness/memory/tags.hpp"
#include "harness/memory/trace_state.hpp"

namespace oomlab::memory {

enum class EventKind { alloc, free, segment_map, segment_unmap, oom, empty_cache, step };
constexpr int kEventKindCount = 7;
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
  std::uint32_t site = 0;        // alloc/oom: where it was made (Trace::site_name; 0: nowhere named)
  bool same_as(const TraceEvent& other) const;  // everything but time and stream
};

// Which clock the exported trace uses. dry does no work, so its wall clock says nothing (a 24-step
// run takes 2 ms): there each event is one microsecond of logical time and the steps are visible.
enum class TimeAxis { wall, logical };

class Trace {
 public:
  explicit Trace(std::size_t capacity) : capacity_(capacity) {}
  // Assigns the sequence number, tag_allocated_after and (alloc, oom) the current site
  // (site.hpp); drops the oldest event when full.
  void record(TraceEvent event);
  const std::deque<TraceEvent>& events() const { return events_; }
  std::uint64_t dropped() const { return dropped_; }
  std::size_t capacity() const { return capacity_; }
  std::uint64_t recorded() const { return next_sequence_; }  // every event, dropped ones too
  // Events of each kind ever recorded (dropped ones too), indexed by EventKind.
  const std::array<std::uint64_t, kEventKindCount>& counts() const { return counts_; }

  // "" for site 0, else the site path, "forward › block 9 › attention scores".
  const std::string& site_name(std::uint32_t site) const;
  const std::vector<std::string>& sites() const { return sites_; }

  // Segments and live blocks before the oldest kept event (empty when nothing was dropped), and now.
  const TraceState& state_before_events() const { return state_before_; }
  TraceState state() const;

  // "" when nothing was dropped, else one line saying how many and what capacity would keep all.
  std::string dropped_note() const;

  // Called (under the allocator's lock: it must not call the allocator) after every event that
  // changes what the device holds or marks a step: segment_map, segment_unmap, oom, step. The
  // device monitor samples there, so it cannot miss a peak. Registering a listener changes no
  // recorded state, hence const. nullptr removes it.
  using Observer = std::function<void(const TraceEvent&)>;
  void set_observer(Observer observer) const;

  // Chrome trace (trace_export.cpp): instants, counters "allocated", "reserved", "tag <name>",
  // block slices, and otherData (capacity, dropped and recorded events, the time axis, sites, the
  // state before the events).
  nlohmann::json to_chrome_json(TimeAxis axis = TimeAxis::wall) const;

 private:
  std::uint32_t intern_site(std::string site);

  std::size_t capacity_;
  std::deque<TraceEvent> events_;
  std::uint64_t dropped_ = 0;
  std::uint64_t next_sequence_ = 0;
  std::array<std::int64_t, kTagCount> tag_bytes_{};
  std::array<std::uint64_t, kEventKindCount> counts_{};
  std::vector<std::string> sites_{""};
  std::unordered_map<std::string, std::uint32_t> site_ids_;
  TraceState state_before_;
  mutable std::shared_ptr<const Observer> observer_;  // std::atomic_load/store: set from any thread
};

}  // namespace oomlab::memory
