// The allocator trace `oomlab replay --trace` writes, made for `oomlab report`: the replay's own
// trace (ReplayResult::chrome_trace) with a `step` event where each iteration the replay found
// starts (Phases: the loop's repetition, the lows between rises, or the _snapshot() marks),
// numbered from 1, so the report's timeline marks the iterations as it marks a scenario's steps.
// `oomlab report` finds the trace of a record x.json as x.trace.json beside it.
#pragma once
#include <nlohmann/json.hpp>

#include "harness/replay/replay_report.hpp"

namespace oomlab::replay {

// The trace unchanged when no iteration was found or the trace dropped its oldest events (its
// events no longer line up with the requests).
nlohmann::json trace_with_iterations(const ReplayReport& report);

}  // namespace oomlab::replay
