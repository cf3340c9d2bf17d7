// The memory timeline: for each variant (one panel each, on one y scale so broken and fixed
// compare at a glance) the allocated bytes stacked by tag, the free-but-reserved bytes above
// them, the budget as a dashed line, the steps on the x axis and the OOM marked. A trace with no
// tags (a replayed snapshot) is one band, labelled so.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "harness/report/trace_reader.hpp"

namespace oomlab::report {

struct TimelinePanel {
  std::string title;  // "broken: oom @ step 14 (leak)"
  const RecordedTrace* trace = nullptr;
  std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();  // max: no cap, no line
  std::string budget_name;  // "rtx3060-12g", or empty
  // The record's OOM: marked at the end when the trace has no OOM event (memory outside the
  // allocator ran out: the spawn story's worker contexts).
  bool oom = false;
  std::int64_t oom_step = -1;
  std::string step_name = "step";  // what the trace's step marks are: "iteration" for a replay
};

std::string timeline_svg(const std::string& title, const std::vector<TimelinePanel>& panels);

}  // namespace oomlab::report
