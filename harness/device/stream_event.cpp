#include "harness/device/stream_event.hpp"

#include "harness/device/cuda_backend.hpp"

namespace oomlab {

StreamEvent::StreamEvent(DeviceKind kind) {
  if (kind == DeviceKind::cuda) event_ = detail::cuda_event_create();
}

StreamEvent::~StreamEvent() { detail::cuda_event_destroy(event_); }

void StreamEvent::record(memory::StreamHandle stream) {
  if (event_) detail::cuda_event_record(event_, stream);
}

void StreamEvent::make_stream_wait(memory::StreamHandle stream) const {
  if (event_) detail::cuda_stream_wait_event(stream, event_);
}

void StreamEvent::synchronize() const {
  if (event_) detail::cuda_event_synchronize(event_);
}

}  // namespace oomlab
