// oomlab replay SNAPSHOT: a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) replayed
// through oomlab's caching allocator on dry, compared with PyTorch's own segment decisions, its
// OOM diagnosed, and with --what-if the remedies tried on the same requests (harness/replay).
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/cli/replay_dump_output.hpp"
#include "harness/cli/replay_output.hpp"
#include "harness/replay/dump_state.hpp"
#include "harness/replay/replay_record.hpp"
#include "harness/replay/replay_record_trace.hpp"
#include "harness/replay/replay_report.hpp"
#include "harness/replay/snapshot_file.hpp"
#include "harness/memory/user_text.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/json_text.hpp"

namespace oomlab::cli {
namespace {

void write_output(const char* option, const std::string& path, const std::string& contents) {
  try {
    write_file_atomically(path, contents);
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string(option) + ": " + e.what());
  }
}

replay::Snapshot load(const ReplayCliOptions& options) {
  try {
    return replay::load_snapshot(options.snapshot);
  } catch (const replay::SnapshotError& e) {
    throw UsageError(e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

// The trace's entries are let go once the events are made: a big snapshot's trace would
// otherwise be held twice, as entries and as events.
replay::ReplayReport analyse(replay::Snapshot& snapshot, const ReplayCliOptions& options) {
  try {
    replay::ReplayRequest request;
    request.budget = options.budget;
    request.alloc_conf = options.alloc_conf;
    request.device = options.device;
    request.what_if = options.what_if;
    request.keep_trace = !options.trace_path.empty();
    request.from = options.from;
    request.to = options.to;
    std::vector<replay::DeviceEvents> devices = replay::snapshot_events(snapshot);
    std::vector<std::vector<replay::TraceEntry>>().swap(snapshot.device_traces);
    return replay::analyse_events(std::move(devices), snapshot, request);
  } catch (const replay::SnapshotError& e) {
    throw UsageError(e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

int replay_and_print(const ReplayCliOptions& options) {
  if (!options.out_path.empty()) require_writable("--out", options.out_path);
  if (!options.trace_path.empty()) require_writable("--trace", options.trace_path);
  replay::Snapshot snapshot = load(options);
  if (!replay::has_allocation_history(snapshot) && !snapshot.segments.empty()) {
    // Segments only: the state at the dump is still worth reading; nothing else can be made.
    if (!options.out_path.empty() || !options.trace_path.empty()) {
      throw UsageError(std::string(options.out_path.empty() ? "--trace" : "--out") + ": nothing to write: " +
                       kNoHistoryAdvice);
    }
    const std::vector<replay::DumpState> states = replay::dump_state(snapshot);
    std::fputs(options.json ? (json_text(dump_state_json(states, options.snapshot), 2) + "\n").c_str()
                            : dump_state_text(states, options.snapshot).c_str(),
               stdout);
    return 0;
  }
  const replay::ReplayReport report = analyse(snapshot, options);
  if (options.json) {
    std::fputs(replay_json_text(report, options.snapshot).c_str(), stdout);
  } else {
    std::fputs(replay_text(report, options.snapshot).c_str(), stdout);
  }
  if (!options.out_path.empty()) {
    const RunRecord record = replay::replay_record(report, options.snapshot);
    write_output("--out", options.out_path, json_text(to_json(record), 2) + "\n");
  }
  if (!options.trace_path.empty()) {
    write_output("--trace", options.trace_path, json_text(replay::trace_with_iterations(report)) + "\n");
  }
  // PyTorch's OOM is part of what must be reproduced: a failure in the same place is a match.
  const bool same_outcome = (report.events.ooms > 0) == !report.fidelity.fits();
  return report.reproduces_pytorch() && same_outcome ? 0 : 1;
}

}  // namespace

// A snapshot too large for this machine's memory is bad input for this machine (exit 2), said
// in one line, not an internal error: what std::bad_alloc means here.
int replay_command(const ReplayCliOptions& options) {
  try {
    return replay_and_print(options);
  } catch (const std::bad_alloc&) {
    throw UsageError(quote_user_text(options.snapshot, 120) +
                     ": replaying it needs more memory than this machine has (std::bad_alloc); use a machine with "
                     "more, or record fewer entries (_record_memory_history(max_entries=...))");
  }
}

}  // namespace oomlab::cli
