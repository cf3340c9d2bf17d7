// An event that orders work between streams of one device: a cudaEvent_t (timing disabled) on
// cuda, inert on host and dry, where every copy and kernel has finished when its call returns.
// An event never recorded counts as complete, as CUDA's do, so the first pass through a ring of
// buffers waits for nothing.
#pragma once
#include <cstdint>

#include "harness/device/device.hpp"

namespace oomlab {

class StreamEvent {
 public:
  explicit StreamEvent(DeviceKind kind);
  ~StreamEvent();
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;
  StreamEvent(StreamEvent&& other) noexcept : event_(other.event_) { other.event_ = 0; }
  StreamEvent& operator=(StreamEvent&&) = delete;

  void record(memory::StreamHandle stream);                  // marks the stream's work so far
  void make_stream_wait(memory::StreamHandle stream) const;  // stream waits for that work
  void synchronize() const;                                  // the host waits for it

 private:
  std::uintptr_t event_ = 0;
};

}  // namespace oomlab
