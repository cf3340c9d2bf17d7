// What a running variant sees: its device, scale, step count, and hooks that feed the record
// (step times, throughput, extra metrics) and the progress line.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab {

class RunContext {
 public:
  RunContext(Device& device, Scale scale, int steps);

  Device& device() const { return device_; }
  memory::CachingAllocator& allocator() { return device_.allocator(); }
  Scale scale() const { return scale_; }
  int steps() const { return steps_; }

  // Brackets one step: marks the allocator trace, times the step (synchronising the device
  // first on cuda), and updates the progress line.
  void begin_step(std::int64_t step);
  void end_step();
  std::int64_t current_step() const { return current_step_; }
  // The step the run is inside now, or -1 between steps (an OOM after the last step is not in it).
  std::int64_t step_in_progress() const {
    return step_start_ == std::chrono::steady_clock::time_point{} ? -1 : current_step_;
  }

  // Work done in the run, e.g. (samples, "samples/s") or (bytes, "GB/s"); divided by the
  // measured step time into the record's throughput.
  void add_work(double amount, std::string unit);
  // Scenario-specific numbers that go into the record's "metrics" object.
  void set_metric(const std::string& name, double value);
  // A line for the log (stderr; the progress line is redrawn after it).
  void note(const std::string& text);

  // Read by the runner when the variant ends.
  const std::vector<double>& step_seconds() const { return step_seconds_; }
  double work() const { return work_; }
  const std::string& work_unit() const { return work_unit_; }
  const std::map<std::string, double>& metrics() const { return metrics_; }

  // Called by the runner: how the progress line is drawn (nullptr: no progress output).
  using ProgressFn = void (*)(void* user, const RunContext& context);
  void set_progress(ProgressFn fn, void* user) { progress_fn_ = fn; progress_user_ = user; }

 private:
  Device& device_;
  Scale scale_;
  int steps_;
  std::int64_t current_step_ = -1;
  std::chrono::steady_clock::time_point step_start_{};
  std::vector<double> step_seconds_;
  double work_ = 0;
  std::string work_unit_;
  std::map<std::string, double> metrics_;
  ProgressFn progress_fn_ = nullptr;
  void* progress_user_ = nullptr;
};

}  // namespace oomlab
