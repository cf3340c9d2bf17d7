// f32 values on the device, read back to the host with one wait instead of one each: queue()
// puts an asynchronous device->host copy of a tensor's values into a host buffer (pinned on
// cuda, so the copy is a DMA ordered on the compute stream and the host goes on at once), and
// wait() synchronises the stream once, after which value() holds every queued value. PyTorch's
// `loss.item()` per loss drains the GPU's queue each time; this is one `.item()` per step.
// Host memory only: the device allocations are what they were. On host the copies are done
// when queue() returns; on dry there is nothing to copy and every value is 0.
#pragma once
#include <cstddef>

#include "harness/device/host_buffer.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::srgan {

class ScalarReadback {
 public:
  ScalarReadback(Device& device, std::size_t slots);

  // Copies `values` (f32, on this device) into slots [first, first + numel). The tensor may be
  // freed right after: the copy is ordered before any later use of its memory on the stream.
  void queue(const Tensor& values, std::size_t first);
  // The host waits once for everything queued (and every kernel launched) so far.
  void wait();
  // A slot's value as of the last wait() (queue() on host). 0 on dry.
  float value(std::size_t slot) const;
  // Milliseconds the last wait() blocked: how far the device was behind the host.
  double last_wait_ms() const { return last_wait_ms_; }

 private:
  Device& device_;
  std::size_t slots_;
  HostBuffer buffer_;
  double last_wait_ms_ = 0;
};

}  // namespace oomlab::srgan
