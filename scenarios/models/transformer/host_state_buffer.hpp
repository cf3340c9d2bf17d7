// Host memory for optimizer state moved off the device (CPU offload): pinned (cudaHostAlloc) on
// cuda, so copies are true async DMA; ordinary zeroed memory on host; nothing at all on dry,
// where copies are no-ops. Owned, move-only.
#pragma once
#include <cstddef>

#include "harness/device/device.hpp"

namespace oomlab::model {

class HostStateBuffer {
 public:
  HostStateBuffer() = default;
  HostStateBuffer(DeviceKind kind, std::size_t bytes);  // zero-filled
  ~HostStateBuffer();
  HostStateBuffer(HostStateBuffer&& other) noexcept;
  HostStateBuffer& operator=(HostStateBuffer&& other) noexcept;
  HostStateBuffer(const HostStateBuffer&) = delete;
  HostStateBuffer& operator=(const HostStateBuffer&) = delete;

  // nullptr on dry. Byte offsets into it address chunks.
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  bool pinned() const { return pinned_; }

 private:
  void release();
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  bool pinned_ = false;
};

// Pinned allocation and release (cudaHostAlloc / cudaFreeHost); throw without CUDA.
void* pinned_host_alloc(std::size_t bytes);
void pinned_host_free(void* ptr);

}  // namespace oomlab::model
