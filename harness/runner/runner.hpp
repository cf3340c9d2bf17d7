// Running one scenario variant and getting its record, in this process or in a child.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/memory/alloc_config.hpp"
#include "harness/memory/budget.hpp"
#include "harness/runner/run_context.hpp"
#include "harness/runner/run_record.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab {

struct RunRequest {
  std::string scenario;
  std::string variant;
  DeviceKind device = DeviceKind::host;
  Scale scale = Scale::tiny;
  std::string budget;      // size or GPU profile; empty: the scenario's budget at this scale
  int steps = 0;           // 0: the scenario's default at this scale
  std::string alloc_conf;  // OOMLAB_ALLOC_CONF syntax, applied over the environment's
  KnobSettings set;        // --set: knob values over the variant's
  std::string trace_path;  // Chrome-trace JSON of the allocator events; empty: none
  std::string oom_dump_path;  // on an OOM: the last events and the segments (memory::oom_dump); empty: none
  bool progress = true;    // draw a progress line (only ever when stderr is a terminal)
  double timeout_seconds = 0;  // a child still running after this long is killed; 0: no limit
  // Time the scenario's profiled ranges (harness/device/op_profiler.hpp) on the device and put
  // each range's total into the record's metrics as "profile_ms.<range>" (the steps after the
  // scenario's warm-up steps, RunContext::set_warmup_steps).
  bool profile = false;
  // Plan the run's need (a second, uncapped run on dry) for the record; a search that only asks
  // "does it fit?" many times turns it off.
  bool plan_need = true;
  bool quiet = false;      // no notes from the scenario (a search's many probes)
  // A rank > 0 of a sharded run on GPUs, started by rank 0 (launch_rank_process): its rank and the
  // NCCL communicator it joins. Its device checks are rank 0's, and it plans no need of its own.
  ShardRole shard;
};

// A request with everything looked up and parsed. Allocator settings are layered: the variant's
// own configure(), then OOMLAB_ALLOC_CONF, then --alloc-conf (what the user says explicitly wins
// over the variant), then the budget. Knobs: the variant's values, then --set.
struct ResolvedRun {
  const Scenario* scenario = nullptr;
  VariantSpec variant;
  memory::Budget budget;
  memory::AllocatorConfig config;
  KnobValues knobs;
  int steps = 0;
};

// Throws std::invalid_argument with one line naming the bad input (an unknown scenario or
// variant lists the valid ones; a bad budget, alloc conf, step count or unusable device).
ResolvedRun resolve_run(const RunRequest& request);

// The variant names `variant_or_all` stands for ("all": every variant, in declared order).
// Throws std::invalid_argument listing the valid names.
std::vector<std::string> select_variants(const Scenario& scenario,
                                         const std::string& variant_or_all);

// The record's fields known before running: scenario, variant, device kind, scale, budget,
// steps, alloc_conf, expectation and build facts, with outcome `error` until a run fills it.
// Never throws: what cannot be resolved stays empty.
RunRecord make_base_record(const RunRequest& request);

// Runs the variant here. Never throws for the run's own failures: an OomError is outcome
// `oom`, any other exception (including an unusable device) outcome `error`.
RunRecord run_variant_in_process(const RunRequest& request);

// Runs the variant in a child process (`executable __child ...`, by default this binary
// again) and reads the record it writes. A child killed by a signal (or by the request's time
// limit) is outcome `crash`; a child that exits without a record is outcome `error`. Never
// throws for the child's failures.
RunRecord run_variant_in_child(const RunRequest& request,
                               const std::string& executable = "/proc/self/exe");

// Rank `rank` of the sharded run `request` (rank 0's) in a child process on the rank-th GPU this
// process sees (CUDA_VISIBLE_DEVICES narrowed to it), joining NCCL communicator `nccl_id`. Its
// record goes to a private folder; it draws no progress line and writes no trace or OOM dump (the
// user's paths are rank 0's). Throws std::invalid_argument when there is no rank-th GPU.
std::unique_ptr<RankProcess> launch_rank_process(const RunRequest& request, int rank, const std::string& nccl_id);

// The hidden subcommand the child runs. A program that runs variants in children must call
// child_main() from main() when argv[1] is kChildCommand; it returns the exit code.
inline constexpr const char* kChildCommand = "__child";
int child_main(int argc, char** argv);

}  // namespace oomlab
