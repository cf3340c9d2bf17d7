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

}  // namespace oomlab::scenarios::weights7b
