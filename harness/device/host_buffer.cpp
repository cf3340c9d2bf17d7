#include "harness/device/host_buffer.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "harness/device/cuda_backend.hpp"

namespace oomlab {

HostBuffer::HostBuffer(DeviceKind kind, std::size_t bytes, bool zero_filled) : bytes_(bytes) {
  if (kind == DeviceKind::dry || bytes == 0) return;
  if (kind == DeviceKind::cuda) {
    data_ = detail::cuda_host_alloc(bytes);
    pinned_ = true;
  } else {
    data_ = std::malloc(bytes);
    if (data_ == nullptr) throw std::bad_alloc();
  }
  if (zero_filled) std::memset(data_, 0, bytes);
}

HostBuffer::~HostBuffer() { release(); }

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      pinned_(std::exchange(other.pinned_, false)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    pinned_ = std::exchange(other.pinned_, false);
  }
  return *this;
}

void HostBuffer::release() {
  if (data_ == nullptr) return;
  if (pinned_) {
    detail::cuda_host_free(data_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
}

}  // namespace oomlab
