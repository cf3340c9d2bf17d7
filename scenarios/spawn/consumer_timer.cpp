#include "scenarios/spawn/consumer_timer.hpp"

#include <stdexcept>

#include "scenarios/spawn/cuda_support.hpp"

namespace oomlab::scenarios {

ConsumerTimer::ConsumerTimer(Device& device, int steps) : device_(device) {
  if (!device.is_cuda()) return;
  try {
    for (int i = 0; i < steps; ++i) {
      begin_events_.push_back(spawn_cuda::timing_event_create());
      end_events_.push_back(spawn_cuda::timing_event_create());
    }
  } catch (...) {
    for (std::uintptr_t e : begin_events_) spawn_cuda::event_destroy(e);
    for (std::uintptr_t e : end_events_) spawn_cuda::event_destroy(e);
    throw;
  }
}

ConsumerTimer::~ConsumerTimer() {
  for (std::uintptr_t e : begin_events_) spawn_cuda::event_destroy(e);
  for (std::uintptr_t e : end_events_) spawn_cuda::event_destroy(e);
}

void ConsumerTimer::begin(int step) {
  if (device_.is_cuda()) {
    spawn_cuda::event_record(begin_events_.at(static_cast<std::size_t>(step)), device_.stream());
  } else {
    step_start_ = std::chrono::steady_clock::now();
  }
}

void ConsumerTimer::end(int step) {
  if (device_.is_cuda()) {
    spawn_cuda::event_record(end_events_.at(static_cast<std::size_t>(step)), device_.stream());
  } else {
    host_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start_).count();
  }
  ended_ = step + 1;
}

double ConsumerTimer::busy_seconds() {
  if (!device_.is_cuda()) return host_seconds_;
  if (ended_ == 0) return 0;
  spawn_cuda::event_synchronize(end_events_[static_cast<std::size_t>(ended_ - 1)]);
  double seconds = 0;
  for (int i = 0; i < ended_; ++i) {
    seconds += spawn_cuda::event_elapsed_ms(begin_events_[static_cast<std::size_t>(i)],
                                            end_events_[static_cast<std::size_t>(i)]) / 1000.0;
  }
  return seconds;
}

}  // namespace oomlab::scenarios
