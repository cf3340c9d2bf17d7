// The phases of a snapshot's run, for two questions: where would empty_cache() have gone (the
// what-if), and does memory grow from one iteration to the next (a leak)?
//
// A phase boundary is a `snapshot` entry in the trace (a _snapshot() call marks one), or else an
// iteration start found from the program's own repetition: a training or inference loop makes
// the same requests (size and Python stack) once per iteration, so the number of times most
// distinct requests recur is the iteration count, and the first request recurring that often
// opens each iteration. Live bytes just before each opening (after the first, whose optimizer
// state is not made yet) are the per-iteration levels a leak raises (not the trace's end: a
// script often frees its tensors before it dumps the snapshot).
// Without such a pattern, an iteration end is a low of live bytes between two rises. Lows are found with hysteresis:
// live bytes must fall by half the trace's typical fall (the median of its falls of at least 1% of its range) from a
// high, then rise again by as much, for the lowest point between to count. A training loop's sawtooth gives one low per
// step; noise smaller than the teeth gives none.
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
  bool from_snapshot_marks = false;     // else iterations
  bool from_repetition = false;         // iteration starts of a repeating pattern, else lows
  std::vector<std::int64_t> low_bytes;  // bytes the program holds at each iteration's start or low, in order
  std::vector<std::size_t> level_events;  // the request each low_bytes entry is live after
  std::size_t loop_start = 0;           // the first iteration's first request (repetition), else 0
  std::string describe() const;         // "12 iteration ends (live bytes back to a low)"
  std::string where() const;            // "each iteration's start"
};

// Where the program let go of each block, by event: its free_requested, where PyTorch's allocated
// bytes fall (with record_stream the block is back in the cache only later, at free_completed,
// which is not the program holding it), or its free when the trace has no free_requested for it.
// Live bytes for phases and growth fall there.
std::vector<bool> program_releases(const DeviceEvents& device);
// The bytes the program holds after each event (allocs less program_releases), rounded.
std::vector<std::int64_t> program_live_bytes(const DeviceEvents& device, const memory::RoundupTable& roundup);

// Live bytes are counted with the allocator's rounding (the sizes a replay allocates).
Phases find_phases(const DeviceEvents& device, const memory::RoundupTable& roundup);

// Steady growth of the iteration levels (harness/leak/growth_fit.hpp; a repeating loop's levels
// are judged over as few as three iterations, since a snapshot holds few): a leak, bytes per
// iteration.
leak::GrowthFit fit_iteration_growth(const Phases& phases);

}  // namespace oomlab::replay
