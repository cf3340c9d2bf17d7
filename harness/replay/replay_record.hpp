// A replay as the usual run record (harness/runner/run_record.hpp, schema 3), so `compare` and
// `report` read it beside scenario runs: scenario "replay", variant the snapshot's file name,
// device "dry", no knobs; the budget the replay ran under; the outcome oomlab reached (expected:
// PyTorch's); peaks, need, and the replay's own numbers as metrics (divergent_events,
// pytorch_peak_reserved, the inferred cap, one peak_reserved and fits per what-if row, the
// iterations, the leak or released growth per iteration, the largest allocation sites).
#pragma once
#include <cstddef>
#include <string>

#include "harness/replay/replay_report.hpp"
#include "harness/runner/run_record.hpp"

namespace oomlab::replay {

// metrics["top_site.<site>"]: the live bytes at the peak of each of the largest sites (site_of()).
inline constexpr const char* kTopSitePrefix = "top_site.";
inline constexpr std::size_t kSitesInRecord = 5;

RunRecord replay_record(const ReplayReport& report, const std::string& snapshot_path);

// "expandable_segments:True" -> "expandable_segments_true": a what-if row as a metric name part.
std::string metric_key(const std::string& setting);

}  // namespace oomlab::replay
