// The phases of a snapshot's run, for two questions: where would empty_cache() have gone (the
// what-if), and does memory grow from one iteration to the next (a leak)?
//
// A phase boundary is a `snapshot` entry in the trace (a _snapshot() call marks one), or else an
// iteration end: a low of live bytes between two rises. Lows are found with hysteresis: live
// bytes must fall by half the trace's typical fall (the median of its falls of at least 1% of
// its range) from a high, then rise again by as much, for the lowest point between to count. A
// training loop's sawtooth gives one low per step; noise smaller than the teeth gives none.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/leak/growth_fit.hpp"
#include "harness/memory/alloc_config.hpp"
#include "harness/replay/snapshot_events.hpp"

namespace oomlab::replay {

struct Phases {
  std::vector<std::size_t> boundaries;  // request indices (DeviceEvents::events) ending a phase, sorted
  bool from_snapshot_marks = false;     // else iteration lows
  std::vector<std::int64_t> low_bytes;  // live bytes at each iteration low, in order
  std::string describe() const;         // "12 iteration ends (live bytes back to a low)"
};

// Live bytes are counted with the allocator's rounding (the sizes a replay allocates).
Phases find_phases(const DeviceEvents& device, const memory::RoundupTable& roundup);

// Steady growth of the iteration lows (harness/leak/growth_fit.hpp): a leak, bytes per iteration.
leak::GrowthFit fit_iteration_growth(const Phases& phases);

}  // namespace oomlab::replay
