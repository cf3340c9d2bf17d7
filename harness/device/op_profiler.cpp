#include "harness/device/op_profiler.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "harness/device/cuda_backend.hpp"

namespace oomlab {
namespace {
thread_local OpProfiler* active_profiler = nullptr;
}  // namespace

OpProfiler::OpProfiler(Device& device) : device_(device), previous_(active_profiler) {
  active_profiler = this;
}

OpProfiler::~OpProfiler() {
  active_profiler = previous_;
  for (const std::vector<Range>* ranges : {&closed_, &open_}) {
    for (const Range& range : *ranges) {
      detail::cuda_event_destroy(range.start);
      detail::cuda_event_destroy(range.stop);
    }
  }
  for (std::uintptr_t event : spare_events_) detail::cuda_event_destroy(event);
}

OpProfiler* OpProfiler::active() { return active_profiler; }

ProfilingPaused::ProfilingPaused() : paused_(active_profiler) { active_profiler = nullptr; }
ProfilingPaused::~ProfilingPaused() { active_profiler = paused_; }

std::size_t OpProfiler::name_index(const char* name) {
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return i;
  }
  names_.emplace_back(name);
  return names_.size() - 1;
}

std::uintptr_t OpProfiler::take_event() {
  if (spare_events_.empty()) return detail::cuda_timing_event_create();
  std::uintptr_t event = spare_events_.back();
  spare_events_.pop_back();
  return event;
}

void OpProfiler::begin(const char* name) {
  Range range;
  range.name = name_index(name);
  if (device_.is_cuda()) {
    range.start = take_event();
    detail::cuda_event_record(range.start, device_.stream());
  } else {
    range.host_start = std::chrono::steady_clock::now();
  }
  open_.push_back(range);
}

void OpProfiler::end() {
  if (open_.empty()) throw std::logic_error("OpProfiler::end without begin");
  Range range = open_.back();
  open_.pop_back();
  if (device_.is_cuda()) {
    range.stop = take_event();
    detail::cuda_event_record(range.stop, device_.stream());
  } else if (device_.kind() == DeviceKind::host) {
    range.host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                              range.host_start).count();
  } else {
    range.host_ms = 0;  // dry does no work
  }
  closed_.push_back(range);
}

std::vector<OpProfiler::Total> OpProfiler::totals() {
  std::map<std::size_t, Total> by_name;
  for (const Range& range : closed_) {
    Total& total = by_name[range.name];
    total.name = names_[range.name];
    ++total.calls;
    total.milliseconds += range.stop ? detail::cuda_event_elapsed_ms(range.start, range.stop) : range.host_ms;
  }
  std::vector<Total> result;
  for (auto& entry : by_name) result.push_back(entry.second);
  std::stable_sort(result.begin(), result.end(),
                   [](const Total& a, const Total& b) { return a.milliseconds > b.milliseconds; });
  return result;
}

void OpProfiler::reset() {
  for (const Range& range : closed_) {
    if (range.start) spare_events_.push_back(range.start);
    if (range.stop) spare_events_.push_back(range.stop);
  }
  closed_.clear();
}

}  // namespace oomlab
