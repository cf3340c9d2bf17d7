// Device kinds and the Device class: picks the memory source per backend and routes copies.
// CUDA work goes through cuda_backend.hpp so this file compiles without CUDA headers.
#include "harness/device/device.hpp"

#include <cstring>
#include <stdexcept>

#include "harness/device/cuda_archs.hpp"
#include "harness/device/cuda_backend.hpp"
#include "harness/memory/source.hpp"

namespace oomlab {

const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cuda: return "cuda";
    case DeviceKind::host: return "host";
    case DeviceKind::dry: return "dry";
  }
  return "unknown";
}

std::optional<DeviceKind> parse_device_kind(std::string_view name) {
  for (DeviceKind kind : {DeviceKind::cuda, DeviceKind::host, DeviceKind::dry}) {
    if (name == device_kind_name(kind)) return kind;
  }
  return std::nullopt;
}

bool cuda_available() {
  try {
    // Asked once per process: the answer cannot change and the first call loads the driver.
    static const bool available = detail::cuda_device_count(nullptr) > 0;
    return available;
  } catch (...) {
    return false;
  }
}

int cuda_device_count() {
  try {
    return cuda_available() ? detail::cuda_device_count(nullptr) : 0;
  } catch (...) {
    return 0;
  }
}

std::string cuda_unavailable_reason() {
  try {
    std::string why;
    return detail::cuda_device_count(&why) > 0 ? std::string() : why;
  } catch (const std::exception& e) {
    return e.what();
  }
}

DeviceKind default_device_kind() {
  return cuda_available() ? DeviceKind::cuda : DeviceKind::host;
}

namespace {

std::unique_ptr<memory::MemorySource> make_source(DeviceKind kind,
                                                  const memory::AllocatorConfig& config) {
  switch (kind) {
    case DeviceKind::cuda: {
      std::string why;
      if (detail::cuda_device_count(&why) <= 0) {
        throw std::runtime_error("--device cuda: no usable CUDA device (" + why + ")");
      }
      // A binary without code for this GPU ends here with one line, not at its first kernel.
      (void)current_cuda_code();
      return config.expandable_segments ? memory::make_cuda_vmm_source()
                                        : memory::make_cuda_source();
    }
    case DeviceKind::host: return memory::make_host_source();
    case DeviceKind::dry: return memory::make_dry_source();
  }
  throw std::invalid_argument("unknown device kind");
}

}  // namespace

Device::Device(DeviceKind kind, memory::AllocatorConfig config)
    : kind_(kind), source_(make_source(kind, config)) {
  allocator_ = std::make_unique<memory::CachingAllocator>(*source_, config);
  if (kind_ == DeviceKind::cuda) stream_ = detail::cuda_create_stream();
}

Device::~Device() {
  // The allocator returns its segments to the source, so it goes first.
  allocator_.reset();
  if (stream_ != 0) {
    try {
      detail::cuda_destroy_stream(stream_);
    } catch (const std::exception&) {
      // A destructor must not throw; the process is ending its use of the device anyway.
    }
  }
}

void Device::copy(void* dst, const void* src, std::size_t bytes, CopyKind kind) {
  copy_async(dst, src, bytes, kind, stream_);
  synchronize();
}

void Device::copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                        memory::StreamHandle stream) {
  if (bytes == 0) return;
  switch (kind_) {
    case DeviceKind::cuda: detail::cuda_copy_async(dst, src, bytes, kind, stream); return;
    case DeviceKind::host: std::memcpy(dst, src, bytes); return;
    case DeviceKind::dry: return;  // dry addresses have no backing
  }
}

void Device::memset(void* dst, int value, std::size_t bytes) {
  if (bytes == 0) return;
  switch (kind_) {
    case DeviceKind::cuda:
      detail::cuda_memset_async(dst, value, bytes, stream_);
      synchronize();
      return;
    case DeviceKind::host: std::memset(dst, value, bytes); return;
    case DeviceKind::dry: return;
  }
}

void Device::synchronize() {
  if (kind_ == DeviceKind::cuda) detail::cuda_stream_synchronize(stream_);
}

memory::StreamHandle Device::create_stream() {
  return kind_ == DeviceKind::cuda ? detail::cuda_create_stream() : 0;
}

void Device::destroy_stream(memory::StreamHandle stream) {
  if (kind_ == DeviceKind::cuda) detail::cuda_destroy_stream(stream);
}

}  // namespace oomlab
