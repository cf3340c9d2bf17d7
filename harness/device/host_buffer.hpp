// Host memory that device copies read and write: pinned (cudaHostAlloc) on cuda, so copies are
// true async DMA and overlap compute; ordinary memory on host; nothing at all on dry (data() is
// nullptr and copies are no-ops). Optionally zero-filled. Owned, move-only.
#pragma once
#include <cstddef>

#include "harness/device/device.hpp"

namespace oomlab {

class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(DeviceKind kind, std::size_t bytes, bool zero_filled = false);
  ~HostBuffer();
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

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

}  // namespace oomlab
