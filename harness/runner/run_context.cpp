// RunContext: step timing, work and metrics for the record, and the progress hook.
#include "harness/runner/run_context.hpp"

#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <string>

#include "harness/device/op_profiler.hpp"

namespace oomlab {

RunContext::RunContext(Device& device, Scale scale, int steps, KnobValues knobs)
    : device_(device), scale_(scale), steps_(steps), knobs_(std::move(knobs)) {}

void RunContext::set_warmup_steps(int steps) {
  if (steps < 0) {
    throw std::invalid_argument("RunContext::set_warmup_steps: " + std::to_string(steps) +
                                " warm-up steps");
  }
  if (any_step_begun_) {
    throw std::logic_error("RunContext::set_warmup_steps after the first step began");
  }
  warmup_steps_ = steps;
}

void RunContext::begin_step(std::int64_t step) {
  current_step_ = step;
  any_step_begun_ = true;
  // Work of a step that never ended (its time is unknown) stays out of the steady rate.
  work_in_step_ = 0;
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
  step_work_.push_back(work_in_step_);
  work_in_step_ = 0;
  step_start_ = {};
  // The device is idle here (synchronised above), so the warm-up's timing events are done.
  if (profiler_ && warmup_steps_ > 0 &&
      step_seconds_.size() == static_cast<std::size_t>(warmup_steps_)) {
    profiler_->reset();
  }
  if (progress_fn_) progress_fn_(progress_user_, *this);
}

void RunContext::add_work(double amount, std::string unit) {
  if (!work_unit_.empty() && unit != work_unit_) {
    throw std::invalid_argument("RunContext::add_work: unit '" + unit + "' after '" +
                                work_unit_ + "'");
  }
  work_ += amount;
  work_unit_ = std::move(unit);
  if (step_in_progress() >= 0) {
    work_in_step_ += amount;
  } else if (!step_work_.empty()) {
    step_work_.back() += amount;
  } else {
    work_of_no_step_ += amount;
  }
}

RunContext::Measured RunContext::measured() const {
  Measured m;
  const auto warmup = static_cast<std::size_t>(warmup_steps_);
  if (warmup > 0 && step_seconds_.size() > warmup) {
    m.work = std::accumulate(step_work_.begin() + warmup, step_work_.end(), work_of_no_step_);
    m.seconds = std::accumulate(step_seconds_.begin() + warmup, step_seconds_.end(), 0.0);
    m.warmup_excluded = true;
  } else {
    m.work = work_;
    m.seconds = std::accumulate(step_seconds_.begin(), step_seconds_.end(), 0.0);
  }
  return m;
}

void RunContext::set_metric(const std::string& name, double value) { metrics_[name] = value; }

std::unique_ptr<RankProcess> RunContext::launch_rank(int rank, const std::string& nccl_id) const {
  if (!rank_launcher_) throw std::logic_error("this run cannot start other ranks (only rank 0 of a cuda run can)");
  return rank_launcher_(rank, nccl_id);
}

void RunContext::note(const std::string& text) {
  if (quiet_) return;
  // "\r\033[K" clears a progress line in place; the line is redrawn after the note.
  if (progress_fn_) std::fputs("\r\033[K", stderr);
  const bool labelled = note_label_.empty() || text.rfind(note_label_, 0) == 0;
  std::fprintf(stderr, "%s%s\n", labelled ? "" : (note_label_ + ": ").c_str(), text.c_str());
  if (progress_fn_) progress_fn_(progress_user_, *this);
}

}  // namespace oomlab
