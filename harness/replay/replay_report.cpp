#include "harness/replay/replay_report.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/replay/replay_plan.hpp"

namespace oomlab::replay {
namespace {

constexpr std::size_t kFramesShown = 12;
constexpr std::size_t kSitesShown = 8;

// --device, or the device whose story this is: the one that ran out of memory, else the busiest.
std::size_t pick_device(const std::vector<DeviceEvents>& devices, int wanted) {
  if (wanted < -1) {
    throw std::invalid_argument("--device " + std::to_string(wanted) + ": not a device index (0, 1, ...)");
  }
  std::string traced;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (wanted >= 0 && devices[i].device == wanted) return i;
    traced += (traced.empty() ? "" : ", ") + std::to_string(devices[i].device);
  }
  if (wanted >= 0) {
    throw std::invalid_argument("--device " + std::to_string(wanted) + ": the snapshot has no trace for it (traced: " +
                                traced + ")");
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i < devices.size(); ++i) {
    const bool more_ooms = devices[i].ooms > devices[best].ooms;
    const bool busier = devices[i].ooms == devices[best].ooms && devices[i].allocs > devices[best].allocs;
    if (more_ooms || busier) best = i;
  }
  return best;
}

void add_event_notes(const ReplayReport& report, const Snapshot& /*snapshot*/, std::vector<std::string>& notes) {
  const DeviceEvents& events = report.events;
  if (events.starts_mid_run()) {
    notes.push_back("the trace starts after the run did (" + std::to_string(events.frees_before_trace) +
                    " frees of blocks it never allocated, " + std::to_string(events.allocs_outside_segments) +
                    " allocs in memory it never reserved): the replay starts from an empty cache, so its first "
                    "segment decisions can differ; record with a larger max_entries, from the start of the run");
  }
  if (events.skipped_entries > 0) {
    notes.push_back(std::to_string(events.skipped_entries) +
                    " trace entries of actions this reader does not know were skipped");
  }
  if (report.devices_with_requests > 1) {
    notes.push_back("the snapshot traced " + std::to_string(report.devices_with_requests) +
                    " devices; this is device " + std::to_string(report.device) + " (--device picks another)");
  }
}

// How the cap acted: as set_per_process_memory_fraction (PyTorch checks a request's would-be
// segment, and collects garbage) unless the device itself refused or --budget names a card.
void set_cap_kind(ReplayReport& report, bool card) {
  report.config.budget_is_fraction = !report.budget_range.device_refused && !card;
  if (report.config.budget_is_fraction || report.config.garbage_collection_threshold <= 0) return;
  report.config.garbage_collection_threshold = 0;
  report.notes.push_back("garbage_collection_threshold is set, but PyTorch collects only under "
                         "set_per_process_memory_fraction and this cap is the device's: not collected");
}

void set_budget(ReplayReport& report, const ReplayPlan& plan, const ReplayRequest& request) {
  report.budget_range = infer_budget(report.events, plan, report.settings.config);
  if (!request.budget.empty()) {
    const memory::Budget budget = memory::parse_budget(request.budget);
    report.config.budget = budget.bytes;
    report.budget_text = budget.describe() + " (--budget)";
    set_cap_kind(report, !budget.profile.empty());
    return;
  }
  set_cap_kind(report, false);
  const BudgetRange& range = report.budget_range;
  report.budget_inferred = true;
  if (range.low == 0) {
    report.config.budget = memory::AllocatorConfig::kUnlimited;
    report.budget_text = "unlimited (the trace reserves nothing, so it says nothing about a cap)";
    return;
  }
  report.config.budget = static_cast<std::size_t>(range.low);
  report.budget_text = format_size(range.low) + " inferred: the tightest cap consistent with the trace, " +
                       range.describe() + "; --budget sets the real one";
  if (!range.consistent()) {
    report.notes.push_back("no single cap explains the trace (a failure below a peak it reached: memory used "
                           "outside PyTorch changed during the run?); the replay uses the peak it reached");
  }
  if (range.device_refused) {
    report.notes.push_back("the device itself refused (its free memory was below the segment at the oom): "
                           "memory outside PyTorch's allocator (other processes, the CUDA context, NCCL or "
                           "cuBLAS workspaces) counted against this run");
  }
}

OomFinding find_oom(const ReplayReport& report, const StackTable& stacks) {
  OomFinding finding;
  const ReplayOom* failed = nullptr;
  for (const ReplayOom& oom : report.fidelity.ooms) {
    if (failed == nullptr || (oom.pytorch_failed_too && !failed->pytorch_failed_too)) failed = &oom;
  }
  std::size_t event = kNoEvent;
  if (failed != nullptr) {
    event = failed->event;
    finding.pytorch_failed_too = failed->pytorch_failed_too;
    finding.info = failed->info;
  } else {
    for (std::size_t i = report.window.begin_event; i < report.events.events.size() && event == kNoEvent; ++i) {
      if (report.events.events[i].kind == ReplayEventKind::oom) event = i;
    }
    finding.pytorch_failed_too = true;
  }
  finding.event = event;
  finding.request = describe_request(report.events, event);
  finding.site = site_of(stacks, report.events.events[event].frames);
  finding.frames = stack_lines(stacks, report.events.events[event].frames, kFramesShown);
  if (failed == nullptr) {
    finding.message = "PyTorch ran out of memory here and the replay did not: see the first divergent event";
    return finding;
  }
  // The whole run's bytes decide (diagnose reads need), and a leak found across iterations wins.
  // With the cap inferred, whether the bytes would have fit is judged at the largest cap the
  // trace allows: the replay's tightest one would call a fragmentation OOM capacity.
  if (report.budget_inferred && report.budget_range.high && report.budget_range.consistent()) {
    finding.info.budget = static_cast<std::size_t>(*report.budget_range.high);
  }
  finding.info.need_allocated = static_cast<std::size_t>(report.need_allocated);
  finding.info.need_reserved = static_cast<std::size_t>(report.need_reserved);
  if (report.iteration_growth.leak) finding.info.diagnosis = memory::Diagnosis::leak;
  memory::diagnose(finding.info);
  finding.message = memory::OomError(finding.info).what();
  if (report.iteration_growth.leak) finding.message += "; " + describe_growth(report.iteration_growth);
  return finding;
}

// The plan cut at the window's end: nothing after it is replayed.
ReplayPlan plan_up_to(const ReplayPlan& whole, const ReplayWindow& window) {
  ReplayPlan plan = whole;
  const auto past = std::find_if(plan.steps.begin(), plan.steps.end(), [&](const ReplayStep& step) {
    if (step.event != kNoEvent) return step.event >= window.end_event;
    return step.decision_count > 0 && plan.decisions[step.first_decision].event >= window.end_event;
  });
  plan.steps.erase(past, plan.steps.end());
  return plan;
}

// Phases and growth found in the window's events alone, numbered as the whole trace's events.
void find_window_phases(ReplayReport& report, const StackTable& stacks) {
  const DeviceEvents in_window = window_events(report.events, report.window);
  report.phases = find_phases(in_window, report.config.roundup_power2_divisions);
  report.growth = fit_iteration_growth(report.phases);
  report.iteration_growth =
      explain_growth(in_window, stacks, report.phases, report.growth, report.config.roundup_power2_divisions);
  const std::size_t shift = report.window.begin_event;
  for (std::size_t& event : report.phases.boundaries) event += shift;
  for (std::size_t& event : report.phases.level_events) event += shift;
  report.phases.loop_start += shift;
  if (report.iteration_growth.released_at) *report.iteration_growth.released_at += shift;
  if (report.iteration_growth.stopped_at) *report.iteration_growth.stopped_at += shift;
  report.events.allocs = in_window.allocs;
  report.events.frees = in_window.frees;
  report.events.ooms = in_window.ooms;
  report.events.empty_caches = in_window.empty_caches;
}

}  // namespace

ReplayReport analyse_snapshot(const Snapshot& snapshot, const ReplayRequest& request) {
  return analyse_events(snapshot_events(snapshot), snapshot, request);  // SnapshotError without history
}

ReplayReport analyse_events(std::vector<DeviceEvents> devices, const Snapshot& snapshot,
                            const ReplayRequest& request) {
  ReplayReport report;
  const std::size_t chosen = pick_device(devices, request.device);
  for (const DeviceEvents& device : devices) report.devices_with_requests += device.allocs + device.ooms > 0;
  report.events = std::move(devices[chosen]);
  report.device = report.events.device;
  report.settings = snapshot_settings(snapshot);
  report.notes = report.settings.notes;
  report.config = report.settings.config;
  if (!request.alloc_conf.empty()) {
    report.config = memory::parse_alloc_conf(request.alloc_conf, report.config, "--alloc-conf");
    for (const std::string& note : report.config.notes) report.notes.push_back(note);
    report.config.notes.clear();
  }
  report.window = resolve_window(report.events, request.from, request.to);
  const ReplayPlan whole_plan = plan_replay(report.events, snapshot);
  report.pytorch_peak_reserved = whole_plan.pytorch_peak_reserved;
  report.pytorch_reserved_at_start = whole_plan.pytorch_reserved_at_start;
  set_budget(report, whole_plan, request);  // the run's cap: the whole trace says most about it
  add_event_notes(report, snapshot, report.notes);
  const ReplayPlan plan = report.window.whole ? whole_plan : plan_up_to(whole_plan, report.window);
  if (!report.window.whole) {
    report.events.events.resize(report.window.end_event);
    report.pytorch_peak_reserved = pytorch_peak_in_window(plan, report.window);
  }

  ReplayOptions fidelity;
  fidelity.config = report.config;
  fidelity.compare = true;
  fidelity.keep_trace = request.keep_trace;
  fidelity.measure_from = report.window.begin_event;
  report.fidelity = replay(report.events, plan, fidelity);

  // The need: the same requests with no cap (nothing fails, nothing is collected for a budget).
  const bool cap_acted = !report.fidelity.ooms.empty() || report.config.garbage_collection_threshold > 0;
  if (cap_acted && report.config.budget != memory::AllocatorConfig::kUnlimited) {
    ReplayOptions uncapped;
    uncapped.config = report.config;
    uncapped.config.budget = memory::AllocatorConfig::kUnlimited;
    uncapped.measure_from = report.window.begin_event;
    const ReplayResult need = replay(report.events, plan, uncapped);
    report.need_allocated = need.peak_allocated;
    report.need_reserved = need.peak_reserved;
  } else {
    report.need_allocated = report.fidelity.peak_allocated;
    report.need_reserved = report.fidelity.peak_reserved;
  }

  if (report.window.whole) {
    report.phases = find_phases(report.events, report.config.roundup_power2_divisions);
    report.growth = fit_iteration_growth(report.phases);
    report.iteration_growth = explain_growth(report.events, snapshot.stacks, report.phases, report.growth,
                                             report.config.roundup_power2_divisions);
  } else {
    find_window_phases(report, snapshot.stacks);
  }
  if (report.fidelity.peak_allocated > 0) {
    report.live_at_peak = report.fidelity.peak_allocated;
    report.top_sites = top_sites(report.events, snapshot.stacks, report.fidelity.peak_allocated_event,
                                 report.config.roundup_power2_divisions, kSitesShown);
  }
  if (!report.fidelity.ooms.empty() || report.events.ooms > 0) report.oom = find_oom(report, snapshot.stacks);
  if (request.what_if) {
    // An inferred cap is the tightest; a fix may fit only nearer the largest the trace allows.
    std::optional<std::size_t> largest_cap;
    const BudgetRange& range = report.budget_range;
    if (report.budget_inferred && range.high && range.consistent() && *range.high > range.low) {
      largest_cap = static_cast<std::size_t>(*range.high);
    }
    report.what_if = what_if(report.events, plan, report.config, report.phases, largest_cap, report.window.begin_event);
  }
  return report;
}

}  // namespace oomlab::replay
