// `oomlab replay --from A --to B`: the stretch of a trace a replay reports. Everything before it
// is still replayed (the allocator's state at the window's start depends on it), but the peaks,
// failed requests, sites, iterations, growth and what-ifs are those of the window.
//
// A bound is `entry:N`, the device trace's entry N (as messages number them,
// device_traces[0][N]), or a time since the trace's first entry: a number and a unit, 12.5s,
// 300ms or 1500us (time_us counts microseconds since the epoch, so a relative time is what a
// user can read off a timeline). --from is included, --to is not: entry:100 to entry:200 covers
// entries 100 to 199.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "harness/replay/replay_plan.hpp"
#include "harness/replay/snapshot.hpp"
#include "harness/replay/snapshot_events.hpp"

namespace oomlab::replay {

struct ReplayWindow {
  bool whole = true;              // no --from/--to
  std::size_t begin_entry = 0;    // trace entries [begin_entry, end_entry)
  std::size_t end_entry = 0;
  std::size_t begin_event = 0;    // DeviceEvents::events [begin_event, end_event)
  std::size_t end_event = 0;
  std::string text;               // "entries 1000 to 1999 (1.250s to 2.500s after the first entry)"
};

// Throws std::invalid_argument, one line naming the option: an unparsable bound, a bound past
// the trace, --from not before --to, a time bound on a trace without times, a window without
// requests.
ReplayWindow resolve_window(const DeviceEvents& device, const std::string& from, const std::string& to);

// The window's events alone, renumbered from 0: a free of a block allocated before the window
// counts as one from before the trace (alloc_event = kNoEvent); the counts are the window's.
DeviceEvents window_events(const DeviceEvents& device, const ReplayWindow& window);

// PyTorch's reserved peak within the window, from its own segment decisions (the bytes reserved
// as the window starts count).
std::uint64_t pytorch_peak_in_window(const ReplayPlan& plan, const ReplayWindow& window);

}  // namespace oomlab::replay
