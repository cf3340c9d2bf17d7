#include "harness/device/monitor.hpp"

#include <exception>
#include <memory>

#include "harness/device/cuda_backend.hpp"

namespace oomlab {

DeviceMonitor::DeviceMonitor(Device& device, std::chrono::milliseconds interval,
                             std::size_t simulated_context_bytes)
    : interval_(interval.count() > 0 ? interval : std::chrono::milliseconds(1)),
      trace_(device.allocator().trace()) {
  if (device.is_cuda()) {
    // Made here, on the caller's thread, so the probe sees the run's current device.
    auto probe = std::make_shared<detail::CudaUsedMemoryProbe>();
    method_ = probe->method();
    read_used_ = [probe] { return probe->used_bytes(); };
  } else {
    method_ = "allocator";
    memory::CachingAllocator& allocator = device.allocator();
    read_used_ = [&allocator, simulated_context_bytes] {
      auto reserved = allocator.stats().reserved.current;
      return static_cast<std::size_t>(reserved > 0 ? reserved : 0) + simulated_context_bytes;
    };
  }
  sample();  // a value exists even when the run is shorter than one interval
  if (device.is_cuda()) {
    trace_.set_observer([this](const memory::TraceEvent&) {
      event_samples_.fetch_add(1);
      sample();
    });
  } else {
    // Under the allocator's lock: the event's own reserved bytes, not a stats() call.
    trace_.set_observer([this, simulated_context_bytes](const memory::TraceEvent& event) {
      event_samples_.fetch_add(1);
      keep(static_cast<std::size_t>(event.reserved_after > 0 ? event.reserved_after : 0) + simulated_context_bytes);
    });
  }
  thread_ = std::thread([this] { loop(); });
}

DeviceMonitor::~DeviceMonitor() { stop(); }

void DeviceMonitor::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  trace_.set_observer(nullptr);
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  sample();
}

std::string DeviceMonitor::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void DeviceMonitor::sample() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_) return;
  }
  try {
    keep(read_used_());
  } catch (const std::exception& e) {
    // A monitor must never take the run down: remember why and stop sampling.
    std::lock_guard<std::mutex> lock(mutex_);
    failed_ = true;
    error_ = e.what();
  }
}

void DeviceMonitor::keep(std::size_t used) {
  last_used_.store(used);
  std::size_t peak = peak_used_.load();
  while (used > peak && !peak_used_.compare_exchange_weak(peak, used)) {
  }
  samples_.fetch_add(1);
}

std::string DeviceMonitor::describe() const {
  return method_ + " at every segment map/unmap, step and OOM, and every " + std::to_string(interval_.count()) + " ms";
}

void DeviceMonitor::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (wake_.wait_for(lock, interval_, [this] { return stopping_; })) break;
    lock.unlock();
    sample();
    lock.lock();
  }
}

}  // namespace oomlab
