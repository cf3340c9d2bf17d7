#include "scenarios/models/transformer/host_state_buffer.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace oomlab::model {

HostStateBuffer::HostStateBuffer(DeviceKind kind, std::size_t bytes) : bytes_(bytes) {
  if (kind == DeviceKind::dry || bytes == 0) return;
  if (kind == DeviceKind::cuda) {
    data_ = pinned_host_alloc(bytes);
    pinned_ = true;
  } else {
    data_ = std::malloc(bytes);
    if (data_ == nullptr) throw std::bad_alloc();
  }
  std::memset(data_, 0, bytes);
}

HostStateBuffer::~HostStateBuffer() { release(); }

HostStateBuffer::HostStateBuffer(HostStateBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      pinned_(std::exchange(other.pinned_, false)) {}

HostStateBuffer& HostStateBuffer::operator=(HostStateBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    pinned_ = std::exchange(other.pinned_, false);
  }
  return *this;
}

void HostStateBuffer::release() {
  if (data_ == nullptr) return;
  if (pinned_) {
    pinned_host_free(data_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
}

}  // namespace oomlab::model
