// oomlab replay SNAPSHOT: a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) replayed
// through oomlab's caching allocator on dry, compared with PyTorch's own segment decisions, its
// OOM diagnosed, and with --what-if the remedies tried on the same requests (harness/replay).
#include <cstdio>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

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

struct ReplayCliOptions {
  std::string snapshot;     // the file torch.cuda.memory._dump_snapshot wrote (.pickle, or gzipped)
  std::string budget;       // empty: the tightest cap consistent with the trace
  std::string alloc_conf;   // over the snapshot's own settings
  std::string out_path;     // the run record
  std::string trace_path;   // oomlab's allocator trace of the replay (Chrome/Perfetto JSON)
  int device = -1;          // -1: the device that ran out of memory, else the busiest
  bool what_if = false;     // replay under each remedy too
  bool json = false;
  std::string from, to;     // the window reported: entry:N or a time since the first entry (12.5s)
};

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

Command add_replay_command(CLI::App& app) {
  auto options = std::make_shared<ReplayCliOptions>();
  CLI::App* replay = app.add_subcommand(
      "replay", "Replay a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) through oomlab's "
                "caching allocator on dry: the same segment decisions as PyTorch (or the first that "
                "differs), its OOM diagnosed with the Python frames, the allocation sites at the peak; "
                "with --what-if each remedy tried on the same requests. Exit 0 when it reproduces "
                "PyTorch, 1 when it diverges, 2 on bad input");
  replay->add_option("SNAPSHOT", options->snapshot, "The snapshot file (.pickle, or .pickle.gz)")->required();
  add_budget_option(*replay, options->budget,
                    "The cap the run had: a size with its unit or a GPU profile (default: the tightest "
                    "cap consistent with the trace)");
  add_alloc_conf_option(*replay, options->alloc_conf,
                        "Allocator settings over the snapshot's own (PYTORCH_CUDA_ALLOC_CONF syntax)");
  replay
      ->add_option("--device", options->device, "The traced device to replay (default: the one that ran out of memory)")
      ->check([](const std::string& text) {
        // Checked as text: CLI11 would read "" and "-1" as the default and say nothing.
        const bool index =
            !text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
        return index ? std::string() : "not a device index: '" + text + "' (0, 1, ...: a device the snapshot traced)";
      });
  replay->add_option("--out", options->out_path, "Write the replay's run record (JSON)");
  replay->add_option("--trace", options->trace_path,
                     "Write oomlab's allocator trace of the replay (Chrome/Perfetto JSON)");
  replay->add_flag("--what-if", options->what_if,
                   "Also replay under expandable segments, max_split_size_mb values, "
                   "roundup_power2_divisions, empty_cache() at phase boundaries and the next smaller card");
  replay->add_option("--from", options->from,
                     "Report from here on: entry:N (the trace's entry N) or a time since its first entry (12.5s, "
                     "300ms, 1500us); what comes before is still replayed");
  replay->add_option("--to", options->to, "Report up to here (not included): entry:N or a time, as --from");
  add_json_flag(*replay, options->json);
  return {replay, [options] { return replay_command(*options); }};
}

}  // namespace oomlab::cli
