// How long the consumer (the training step) kept the device busy, for the GPU idle fraction.
// cuda: a pair of timing events around each step on the compute stream, read once at the end
// (no per-step sync), so the time is the device's, not the launches'. host/dry: the step is
// synchronous, so its wall time is the consumer's time (dry does no math: close to 0).
#pragma once
#include <chrono>
#include <cstdint>
#include <vector>

#include "harness/device/device.hpp"

namespace oomlab::scenarios {

class ConsumerTimer {
 public:
  ConsumerTimer(Device& device, int steps);
  ~ConsumerTimer();
  ConsumerTimer(const ConsumerTimer&) = delete;
  ConsumerTimer& operator=(const ConsumerTimer&) = delete;

  void begin(int step);
  void end(int step);
  // Sum over the steps timed so far, in seconds; on cuda waits for the last step to finish.
  double busy_seconds();

 private:
  Device& device_;
  std::vector<std::uintptr_t> begin_events_, end_events_;  // cuda only
  std::chrono::steady_clock::time_point step_start_;
  double host_seconds_ = 0;
  int ended_ = 0;
};

}  // namespace oomlab::scenarios
