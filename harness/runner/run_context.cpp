// RunContext: step timing, work and metrics for the record, and the progress hook.
#include "harness/runner/run_context.hpp"

#include <cstdio>
#include <stdexcept>

namespace oomlab {

RunContext::RunContext(Device& device, Scale scale, int steps)
    : device_(device), scale_(scale), steps_(steps) {}

void RunContext::begin_step(std::int64_t step) {
  current_step_ = step;
  allocator().mark_step(step);
  // On cuda the previous step's kernels may still run: wait, so this step's time is its own.
  device_.synchronize();
  step_start_ = std::chrono::steady_clock::now();
}

void RunContext::end_step() {
  if (step_start_ == std::chrono::steady_clock::time_point{}) {
    throw std::logic_error("RunContext::end_step without begin_step");
  }
  device_.synchronize();
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - step_start_;
  step_seconds_.push_back(elapsed.count());
  step_start_ = {};
  if (progress_fn_) progress_fn_(progress_user_, *this);
}

void RunContext::add_work(double amount, std::string unit) {
  if (!work_unit_.empty() && unit != work_unit_) {
    throw std::invalid_argument("RunContext::add_work: unit '" + unit + "' after '" +
                                work_unit_ + "'");
  }
  work_ += amount;
  work_unit_ = std::move(unit);
}

void RunContext::set_metric(const std::string& name, double value) { metrics_[name] = value; }

void RunContext::note(const std::string& text) {
  // "\r\033[K" clears a progress line in place; the line is redrawn after the note.
  if (progress_fn_) std::fputs("\r\033[K", stderr);
  std::fprintf(stderr, "%s\n", text.c_str());
  if (progress_fn_) progress_fn_(progress_user_, *this);
}

}  // namespace oomlab
