// What would have fixed it: the same requests replayed under each remedy the allocator can
// express (the seed's environment advice, answered for the user's own run), each with its
// reserved peak, whether it fits the budget, and how fragmented the cache was at that peak.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/budget.hpp"
#include "harness/replay/phases.hpp"
#include "harness/replay/replay_plan.hpp"

namespace oomlab::replay {

struct WhatIfRow {
  std::string setting;             // "expandable_segments:True", "empty_cache() at 12 iteration ends"
  std::string alloc_conf;          // the settings as OOMLAB_ALLOC_CONF
  std::uint64_t budget = 0;
  std::uint64_t peak_reserved = 0;
  std::uint64_t peak_allocated = 0;
  bool fits = false;               // no request failed
  std::size_t failed_requests = 0;
  // With an inferred cap, the same row at the largest cap the trace allows: a fix that fails at
  // the tightest cap may still have fitted the real one. Unset without such a cap.
  std::optional<bool> fits_at_largest_cap;
  double fragmentation_at_peak = 0;
  bool as_recorded = false;        // the first row: the run's own settings
};

// Rows: as recorded; expandable_segments:True; max_split_size_mb 64/128/256/512 (those below
// the reserved peak and not already set); roundup_power2_divisions:4; empty_cache() at the
// phase boundaries (when there are any); the next smaller GPU profile's budget (when the budget
// is one a profile undercuts).
std::vector<WhatIfRow> what_if(const DeviceEvents& device, const ReplayPlan& plan,
                               const memory::AllocatorConfig& recorded, const Phases& phases,
                               std::optional<std::size_t> largest_cap = std::nullopt,
                               std::size_t measure_from = 0);  // a window's first event (ReplayOptions)

// The GPU profile with the largest budget at least 5% below `budget`: the next card down, not
// one within a rounding of it. nullptr when none is.
const memory::GpuProfile* next_smaller_profile(std::size_t budget);

// The fitting row with the lowest reserved peak other than the recorded one (fitting the
// largest cap the trace allows, when asked); nullptr if none.
const WhatIfRow* best_fix(const std::vector<WhatIfRow>& rows, bool at_largest_cap = false);

}  // namespace oomlab::replay
