// `oomlab replay`'s analysis of one snapshot, everything the command prints or writes: the
// settings and cap of the run, the compared replay (fidelity), the OOM with its diagnosis and
// Python frames, the allocation sites at the peak, the phases and leak fit, the what-if table.
// The CLI only prints it (harness/cli/replay_command.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/leak/growth_fit.hpp"
#include "harness/memory/oom_error.hpp"
#include "harness/replay/allocation_sites.hpp"
#include "harness/replay/budget_inference.hpp"
#include "harness/replay/phases.hpp"
#include "harness/replay/phases_growth.hpp"
#include "harness/replay/replay.hpp"
#include "harness/replay/replay_settings.hpp"
#include "harness/replay/replay_window.hpp"
#include "harness/replay/snapshot.hpp"
#include "harness/replay/what_if.hpp"

namespace oomlab::replay {

struct ReplayRequest {
  std::string budget;      // empty: inferred from the trace; else parse_budget's syntax
  std::string alloc_conf;  // over the snapshot's settings
  int device = -1;         // -1: the device with an oom, else the one with the most requests
  bool what_if = false;
  bool keep_trace = false;
  std::string from, to;    // the window reported (replay_window.hpp); empty: the whole trace
};

// The failed request, as the user's program made it.
struct OomFinding {
  std::size_t event = 0;
  std::string request;                // describe_request()
  std::string site;                   // site_of(): the user's own line, or what the stack is
  std::vector<std::string> frames;    // stack_lines(): its Python frames (else C++ ones), innermost first
  bool pytorch_failed_too = false;
  memory::OomInfo info;               // oomlab's diagnosis, over the whole run (need) and the leak fit
  std::string message;
};

struct ReplayReport {
  int device = 0;
  std::size_t devices_with_requests = 0;
  DeviceEvents events;                // the replayed device's, up to the window's end; counts: the window's
  ReplayWindow window;                // --from/--to; peaks, OOMs, sites, phases and what-ifs are its own
  SnapshotSettings settings;          // the run's, from the snapshot
  memory::AllocatorConfig config;     // what was replayed: the snapshot's, --alloc-conf, the budget
  BudgetRange budget_range;
  bool budget_inferred = false;
  std::string budget_text;            // "60.00MiB (inferred: the tightest of 60.00MiB .. 64.00MiB ...)"
  std::uint64_t pytorch_peak_reserved = 0;
  std::uint64_t pytorch_reserved_at_start = 0;
  ReplayResult fidelity;              // compared with PyTorch, under the budget
  std::uint64_t need_allocated = 0;   // an uncapped replay's peaks
  std::uint64_t need_reserved = 0;
  std::optional<OomFinding> oom;
  Phases phases;
  leak::GrowthFit growth;
  Growth iteration_growth;            // what the growth is: a leak, or released later (a KV cache)
  std::uint64_t live_at_peak = 0;
  std::vector<SiteBytes> top_sites;
  std::vector<WhatIfRow> what_if;
  std::vector<std::string> notes;     // what the user should know about this replay

  // Every decision the same and, for a trace of the whole run, the same reserved peak.
  bool reproduces_pytorch() const {
    return fidelity.divergent_events == 0 &&
           (pytorch_reserved_at_start > 0 || fidelity.peak_reserved == pytorch_peak_reserved);
  }
};

// Throws SnapshotError (no history: how to record one) and std::invalid_argument (a bad
// --budget, --alloc-conf or --device), each one line.
ReplayReport analyse_snapshot(const Snapshot& snapshot, const ReplayRequest& request);

// The same from the snapshot's events (snapshot_events), which is all of the trace it reads: a
// caller holding a big snapshot can let its device_traces go once the events are made.
ReplayReport analyse_events(std::vector<DeviceEvents> devices, const Snapshot& snapshot,
                            const ReplayRequest& request);

}  // namespace oomlab::replay
