// `oomlab report DIR`: a Markdown page of a result set with charts oomlab draws itself. Per
// scenario one table, its variants as rows and the machines as columns (scenario_table.hpp), then
// per scale: the memory timeline of each variant (from its allocator trace), the segments at the
// peak, and the peaks and throughput as bars across variants, and across GPUs when the set holds
// records of several. A replay's section (oomlab
// replay --out) marks its iterations and lists its largest allocation sites.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/report/result_set.hpp"
#include "harness/report/trace_reader.hpp"

namespace oomlab::report {

struct TraceSource {
  RecordedTrace trace;
  std::string origin;  // how the trace was obtained, for the chart's caption
};

// The allocator trace of a record (a file beside it, a dry re-run, ...), or nullopt with a note
// for the report saying why there is none.
using TraceProvider = std::function<std::optional<TraceSource>(const LoadedRecord& record, std::string& why_not)>;

struct ReportFiles {
  std::string markdown;
  std::vector<std::pair<std::string, std::string>> charts;  // (file name, SVG)
};

// `charts_link` is the folder the Markdown links the charts in ("charts"), relative to the page.
ReportFiles build_report(const ResultSet& set, const TraceProvider& traces, const std::string& charts_link);

}  // namespace oomlab::report
