// What a running variant sees: its device, scale, step count, and hooks that feed the record
// (step times, throughput, extra metrics) and the progress line.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/runner/run_record.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab {

class OpProfiler;

// A sharded run on GPUs is one process per GPU (issue 22). The process the user started is rank
// 0: it starts the others (RunContext::launch_rank: this same run again, in a child process on
// the rank-th GPU); each of those knows its rank and the NCCL communicator to join.
struct ShardRole {
  int rank = 0;
  std::string nccl_id;  // the communicator a rank > 0 joins; empty in rank 0
};

// Another rank's process, started by rank 0.
class RankProcess {
 public:
  virtual ~RankProcess() = default;  // kills it when it still runs
  virtual bool running() = 0;        // never blocks
  virtual RunRecord finish() = 0;    // waits for it: its record (outcome crash or error without one)
};
using RankLauncher = std::function<std::unique_ptr<RankProcess>(int rank, const std::string& nccl_id)>;

class RunContext {
 public:
  RunContext(Device& device, Scale scale, int steps, KnobValues knobs = {});

  Device& device() const { return device_; }
  memory::CachingAllocator& allocator() { return device_.allocator(); }
  Scale scale() const { return scale_; }
  int steps() const { return steps_; }
  // This run's knob values (the variant's, then --set), validated against the scenario's specs.
  const KnobValues& knobs() const { return knobs_; }

  // Brackets one step: marks the allocator trace, times the step (synchronising the device
  // first on cuda), and updates the progress line.
  void begin_step(std::int64_t step);
  void end_step();
  std::int64_t current_step() const { return current_step_; }
  // The step the run is inside now, or -1 between steps (an OOM after the last step is not in it).
  std::int64_t step_in_progress() const {
    return step_start_ == std::chrono::steady_clock::time_point{} ? -1 : current_step_;
  }

  // The first `steps` steps are warm-up (lazy kernel loading, first-call set-up, cache fills):
  // the record's throughput and the registered profiler's totals leave them out. Call before the
  // first step; default 0. Throws std::invalid_argument when negative, std::logic_error after a
  // step began.
  void set_warmup_steps(int steps);
  int warmup_steps() const { return warmup_steps_; }

  // Work done in the run, e.g. (samples, "samples/s") or (bytes, "GB/s"); divided by the
  // measured step time into the record's throughput. Work added inside a step belongs to that
  // step; work added between steps to the step that just ended (the `end_step(); add_work(...)`
  // idiom); work added before the first step to no step, and it always counts.
  void add_work(double amount, std::string unit);
  // Scenario-specific numbers that go into the record's "metrics" object.
  void set_metric(const std::string& name, double value);
  // A line for the log (stderr; the progress line is redrawn after it). Nothing when quiet.
  void note(const std::string& text);
  // A run the user does not watch (the runner's plan of the need): no notes.
  void set_quiet(bool quiet) { quiet_ = quiet; }
  // "train7b/lora": each note starts with it (unless it already does), so the notes of several
  // variants run one after another say whose they are.
  void set_note_label(std::string label) { note_label_ = std::move(label); }

  // Read by the runner when the variant ends.
  const std::vector<double>& step_seconds() const { return step_seconds_; }
  double work() const { return work_; }
  const std::string& work_unit() const { return work_unit_; }
  const std::map<std::string, double>& metrics() const { return metrics_; }

  // What the throughput is taken over: the work and seconds of the completed steps after the
  // warm-up ones (plus the work of no step). When no step after the warm-up completed (an OOM in
  // the warm-up, or steps <= warm-up), every completed step and all the work, so a rate is still
  // reported; `warmup_excluded` says which.
  struct Measured {
    double work = 0;
    double seconds = 0;
    bool warmup_excluded = false;
  };
  Measured measured() const;

  // Called by the runner with its --profile profiler (nullptr: none): reset at the end of the
  // last warm-up step, so its totals cover the steps after it. Explicit rather than
  // OpProfiler::active(), which may be a scenario's own profiler (spawn times its consumer).
  void set_profiler(OpProfiler* profiler) { profiler_ = profiler; }

  // The sharded run's rank this process is (set by the runner; rank 0 by default).
  const ShardRole& shard_role() const { return shard_role_; }
  void set_shard_role(ShardRole role) { shard_role_ = std::move(role); }
  // Starts `rank` of this run in its own process (rank 0 of a cuda run only: the runner sets the
  // launcher). Throws std::logic_error where none is set (a plan on dry, a rank itself).
  std::unique_ptr<RankProcess> launch_rank(int rank, const std::string& nccl_id) const;
  void set_rank_launcher(RankLauncher launcher) { rank_launcher_ = std::move(launcher); }

  // Called by the runner: how the progress line is drawn (nullptr: no progress output).
  using ProgressFn = void (*)(void* user, const RunContext& context);
  void set_progress(ProgressFn fn, void* user) { progress_fn_ = fn; progress_user_ = user; }

 private:
  Device& device_;
  Scale scale_;
  int steps_;
  KnobValues knobs_;
  std::int64_t current_step_ = -1;
  std::chrono::steady_clock::time_point step_start_{};
  std::vector<double> step_seconds_;
  int warmup_steps_ = 0;
  bool any_step_begun_ = false;
  double work_ = 0;                 // all the work, whatever step it belongs to
  double work_of_no_step_ = 0;      // added before the first step
  double work_in_step_ = 0;         // added during the step in progress
  std::vector<double> step_work_;   // per completed step, aligned with step_seconds_
  OpProfiler* profiler_ = nullptr;
  std::string work_unit_;
  std::map<std::string, double> metrics_;
  ProgressFn progress_fn_ = nullptr;
  void* progress_user_ = nullptr;
  bool quiet_ = false;
  std::string note_label_;
  ShardRole shard_role_;
  RankLauncher rank_launcher_;
};

}  // namespace oomlab
