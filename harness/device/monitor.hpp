// DeviceMonitor: the harness's `watch nvidia-smi`. It samples device-level used bytes and keeps
// the peak, from construction until stop() or destruction: at every event that changes what the
// allocator holds (segment map/unmap), at every step mark and at an OOM (the allocator's trace
// calls it there, Trace::set_observer), and on a thread every interval for what changes outside
// the allocator. So the peak cannot fall between two samples while the allocator grows; on host
// and dry it is exactly the allocator's peak reserved plus the simulated context.
//  cuda: NVML's used memory where built in, else total - free from cudaMemGetInfo (both count
//        the CUDA context and other processes, which is the point: the allocator cannot see them);
//  host/dry: the allocator's reserved bytes plus the simulated context bytes, so the record
//        always carries a value comparable with a GPU run.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "harness/device/device.hpp"

namespace oomlab {

class DeviceMonitor {
 public:
  DeviceMonitor(Device& device, std::chrono::milliseconds interval,
                std::size_t simulated_context_bytes = 0);
  ~DeviceMonitor();
  DeviceMonitor(const DeviceMonitor&) = delete;
  DeviceMonitor& operator=(const DeviceMonitor&) = delete;

  // Takes a last sample and joins the thread; further calls do nothing.
  void stop();

  std::size_t peak_used() const { return peak_used_.load(); }
  std::size_t last_used() const { return last_used_.load(); }
  std::size_t samples() const { return samples_.load(); }
  // Samples taken at allocator events (the rest came from the timer).
  std::size_t event_samples() const { return event_samples_.load(); }
  // How the numbers were obtained: "nvml", "cudaMemGetInfo" or "allocator".
  const std::string& method() const { return method_; }
  // "nvml at every segment map/unmap, step and OOM, and every 10 ms".
  std::string describe() const;
  // The first sampling error (the monitor then stops sampling); empty when none.
  std::string error() const;

 private:
  void sample();
  void keep(std::size_t used);
  void loop();

  std::function<std::size_t()> read_used_;
  std::string method_;
  std::chrono::milliseconds interval_;
  std::atomic<std::size_t> peak_used_{0};
  std::atomic<std::size_t> last_used_{0};
  std::atomic<std::size_t> samples_{0};
  std::atomic<std::size_t> event_samples_{0};
  const memory::Trace& trace_;  // its observer is this monitor until stop()
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool failed_ = false;
  std::string error_;
  std::thread thread_;
};

}  // namespace oomlab
