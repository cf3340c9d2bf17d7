#include "harness/replay/replay_record_trace.hpp"

#include <algorithm>
#include <set>
#include <vector>

namespace oomlab::replay {

namespace {

using nlohmann::json;

// The requests (indices into DeviceEvents::events) each iteration starts at, in order.
std::vector<std::size_t> iteration_starts(const Phases& phases) {
  if (phases.boundaries.empty()) return {};
  std::vector<std::size_t> starts = {phases.from_repetition ? phases.loop_start : 0};
  for (std::size_t end : phases.boundaries) {
    if (end + 1 > starts.back()) starts.push_back(end + 1);
  }
  return starts;
}

// How many of the trace's alloc, free and oom events the requests before each of `starts` made:
// an alloc makes an alloc (an oom when it failed here), a request PyTorch failed an oom (or an
// alloc and its free when it fits here), a free a free when its block was allocated here.
std::vector<std::size_t> request_events_before(const ReplayReport& report, const std::vector<std::size_t>& starts) {
  std::set<std::size_t> failed_here;
  for (const ReplayOom& oom : report.fidelity.ooms) failed_here.insert(oom.event);
  const std::vector<ReplayEvent>& events = report.events.events;
  std::vector<bool> live(events.size(), false);
  std::vector<std::size_t> counts;
  std::size_t made = 0;
  auto next_start = starts.begin();
  for (std::size_t i = 0; i <= events.size() && next_start != starts.end(); ++i) {
    while (next_start != starts.end() && *next_start == i) {
      counts.push_back(made);
      ++next_start;
    }
    if (i == events.size()) break;
    const ReplayEvent& e = events[i];
    const bool fits = failed_here.count(i) == 0;
    if (e.kind == ReplayEventKind::alloc) {
      made += 1;
      live[i] = fits;
    } else if (e.kind == ReplayEventKind::oom) {
      made += fits ? 2 : 1;
    } else if (e.kind == ReplayEventKind::free && e.alloc_event != kNoEvent && e.alloc_event < i &&
               live[e.alloc_event]) {
      made += 1;
      live[e.alloc_event] = false;
    }
  }
  return counts;
}

bool is_allocator_instant(const json& e) {
  return e.is_object() && e.value("ph", "") == "i" && e.value("pid", 0) == 1 && e.contains("args");
}

bool made_by_request(const json& e) {
  const std::string name = e.value("name", "");
  return name == "alloc" || name == "free" || name == "oom";
}

}  // namespace

json trace_with_iterations(const ReplayReport& report) {
  const json& trace = report.fidelity.chrome_trace;
  const std::vector<std::size_t> starts = iteration_starts(report.phases);
  if (starts.empty() || !trace.is_object() || !trace.contains("traceEvents")) return trace;
  if (trace.value("otherData", json::object()).value("dropped_events", 0) != 0) return trace;
  const std::vector<std::size_t> before = request_events_before(report, starts);

  json marked = trace;
  json& out = marked["traceEvents"] = json::array();
  std::size_t made = 0, next = 0;
  json last_args = {{"allocated", 0}, {"reserved", 0}, {"sequence", 0}};
  double last_ts = 0;
  const auto mark_step = [&] {
    json args = {{"bytes", 0}, {"segment", 0}, {"offset", 0}, {"tag", "other"}, {"sequence", last_args["sequence"]},
                 {"allocated", last_args["allocated"]}, {"reserved", last_args["reserved"]},
                 {"step", static_cast<std::int64_t>(next + 1)}};
    out.push_back({{"name", "step"}, {"ph", "i"}, {"s", "p"}, {"pid", 1}, {"tid", 0}, {"ts", last_ts},
                   {"args", std::move(args)}});
    ++next;
  };
  for (const json& e : trace["traceEvents"]) {
    if (is_allocator_instant(e)) {
      while (next < before.size() && made >= before[next]) mark_step();
      if (made_by_request(e)) ++made;
      last_args = e["args"];
      last_ts = e.value("ts", last_ts);
    }
    out.push_back(e);
  }
  while (next < before.size()) mark_step();  // an iteration whose requests made no event yet
  return marked;
}

}  // namespace oomlab::replay
