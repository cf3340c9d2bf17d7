// Reads back a trace oomlab wrote (harness/memory/trace_export.hpp: `oomlab run --trace`, an OOM
// dump, the report's own dry re-run): the events in order, the sites, and the segments and blocks
// before the first event, so the events replay exactly.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "harness/memory/trace.hpp"
#include "harness/memory/trace_state.hpp"

namespace oomlab::report {

struct RecordedTrace {
  std::vector<memory::TraceEvent> events;  // time_us holds the exported timestamp
  std::vector<std::string> sites;          // indexed by TraceEvent::site; sites[0] == ""
  memory::TraceState before;               // segments and blocks before events.front()
  bool logical_time = false;               // ts counts events, not microseconds
  std::uint64_t dropped = 0;               // events older than the first one here
};

// Throws InputError naming `path` when it is not such a trace.
RecordedTrace read_trace_file(const std::string& path);
RecordedTrace read_trace(const nlohmann::json& json, const std::string& path);

}  // namespace oomlab::report
