// Compiled only with the CUDA backend (runtime API only).
#include <cuda_runtime_api.h>

#include "harness/device/cuda_check.hpp"
#include "scenarios/weights7b/staging_ring.hpp"

namespace oomlab::scenarios::weights7b {

HostStaging::HostStaging(DeviceKind kind, std::size_t bytes) : kind_(kind), bytes_(bytes) {
  if (kind == DeviceKind::dry || bytes == 0) return;
  if (kind == DeviceKind::cuda) {
    void* pinned = nullptr;
    OOMLAB_CUDA_CHECK(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault));
    data_ = static_cast<std::uint8_t*>(pinned);
  } else {
    data_ = new std::uint8_t[bytes];
  }
}

HostStaging::~HostStaging() {
  if (kind_ == DeviceKind::cuda) {
    if (data_) cudaFreeHost(data_);
  } else {
    delete[] data_;
  }
}

StreamEvent::StreamEvent(DeviceKind kind) {
  if (kind != DeviceKind::cuda) return;
  cudaEvent_t event = nullptr;
  OOMLAB_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  event_ = reinterpret_cast<std::uintptr_t>(event);
}

StreamEvent::~StreamEvent() {
  if (event_) cudaEventDestroy(reinterpret_cast<cudaEvent_t>(event_));
}

void StreamEvent::record(memory::StreamHandle stream) {
  if (!event_) return;
  OOMLAB_CUDA_CHECK(cudaEventRecord(reinterpret_cast<cudaEvent_t>(event_),
                                    reinterpret_cast<cudaStream_t>(stream)));
}

void StreamEvent::make_stream_wait(memory::StreamHandle stream) const {
  if (!event_) return;
  OOMLAB_CUDA_CHECK(cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(stream),
                                        reinterpret_cast<cudaEvent_t>(event_), 0));
}

void StreamEvent::synchronize() const {
  if (!event_) return;
  OOMLAB_CUDA_CHECK(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(event_)));
}

}  // namespace oomlab::scenarios::weights7b
