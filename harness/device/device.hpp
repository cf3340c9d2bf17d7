// The device a run executes on: one of three backends sharing one allocation sequence.
// cuda: real GPU memory and kernels; host: capped host memory and CPU reference kernels;
// dry: address ranges with no backing and no kernels (memory prediction only).
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "harness/memory/caching_allocator.hpp"

namespace oomlab {

enum class DeviceKind { cuda, host, dry };
const char* device_kind_name(DeviceKind kind);
std::optional<DeviceKind> parse_device_kind(std::string_view name);

// True when oomlab was built with CUDA and a usable GPU is present. Never throws.
bool cuda_available();
// Why cuda_available() is false ("cudaGetDeviceCount: cudaErrorNoDevice (...)"); empty when
// it is true. Never throws.
std::string cuda_unavailable_reason();
// How many GPUs this process sees (CUDA_VISIBLE_DEVICES applied); 0 without CUDA. Never throws.
int cuda_device_count();
// cuda when available, else host.
DeviceKind default_device_kind();

struct DeviceInfo {
  std::string kind;               // "cuda", "host", "dry"
  std::string name;               // "NVIDIA H200", "host CPU", "dry (no backing)"
  int compute_major = 0, compute_minor = 0;
  std::size_t total_memory = 0;   // device memory (cuda), physical RAM (host), 0 (dry)
  int driver_version = 0;         // CUDA driver / runtime as reported (e.g. 13000), 0 elsewhere
  int runtime_version = 0;
  // cuda: the dynamic shared memory one block may opt in to (227 KiB on 9.0, 99 KiB on 8.6/8.9)
  std::size_t max_shared_bytes_per_block = 0;
};
DeviceInfo query_device_info(DeviceKind kind);

enum class CopyKind { host_to_device, device_to_host, device_to_device, host_to_host };

class Device {
 public:
  // Builds the memory source (cuda_vmm when config.expandable_segments on cuda) and allocator.
  // Throws std::runtime_error with one clear line when the kind is unusable (no GPU, or no code
  // in this binary for it: cuda_archs.hpp).
  Device(DeviceKind kind, memory::AllocatorConfig config);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  DeviceKind kind() const { return kind_; }
  bool is_cuda() const { return kind_ == DeviceKind::cuda; }
  bool is_dry() const { return kind_ == DeviceKind::dry; }
  memory::CachingAllocator& allocator() { return *allocator_; }
  memory::MemorySource& source() { return *source_; }
  // The compute stream every kernel launches on (0 on host/dry).
  memory::StreamHandle stream() const { return stream_; }

  // Stream-ordered copies and fills; no-ops on dry. The blocking forms synchronise the stream.
  void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind);
  void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                  memory::StreamHandle stream);
  void memset(void* dst, int value, std::size_t bytes);
  void synchronize();

  memory::StreamHandle create_stream();   // 0 on host/dry
  void destroy_stream(memory::StreamHandle stream);

 private:
  DeviceKind kind_;
  std::unique_ptr<memory::MemorySource> source_;
  std::unique_ptr<memory::CachingAllocator> allocator_;
  memory::StreamHandle stream_ = 0;
};

}  // namespace oomlab
