// The CUDA half of harness/device in a CPU-only build: no device is ever available, so Device
// never reaches the other functions; they throw in case a caller skips that check.
#include <stdexcept>

#include "harness/device/cuda_backend.hpp"

namespace oomlab::detail {

namespace {
[[noreturn]] void built_without_cuda() {
  throw std::runtime_error("oomlab was built without CUDA (configure with -DOOMLAB_CUDA=ON)");
}
}  // namespace

int cuda_device_count(std::string* why) {
  if (why) *why = "oomlab was built without CUDA";
  return 0;
}

DeviceInfo cuda_device_info() { built_without_cuda(); }
CudaCodeProbe cuda_probe_code() {
  CudaCodeProbe probe;
  probe.error = "built without CUDA";
  return probe;
}
memory::StreamHandle cuda_create_stream() { built_without_cuda(); }
void cuda_destroy_stream(memory::StreamHandle) { built_without_cuda(); }
void cuda_copy_async(void*, const void*, std::size_t, CopyKind, memory::StreamHandle) {
  built_without_cuda();
}
void cuda_memset_async(void*, int, std::size_t, memory::StreamHandle) { built_without_cuda(); }
void cuda_stream_synchronize(memory::StreamHandle) { built_without_cuda(); }
void* cuda_host_alloc(std::size_t) { built_without_cuda(); }
void cuda_host_free(void*) {}
std::uintptr_t cuda_event_create() { built_without_cuda(); }
void cuda_event_destroy(std::uintptr_t) {}
void cuda_event_record(std::uintptr_t, memory::StreamHandle) { built_without_cuda(); }
void cuda_stream_wait_event(memory::StreamHandle, std::uintptr_t) { built_without_cuda(); }
void cuda_event_synchronize(std::uintptr_t) { built_without_cuda(); }
std::uintptr_t cuda_timing_event_create() { built_without_cuda(); }
double cuda_event_elapsed_ms(std::uintptr_t, std::uintptr_t) { built_without_cuda(); }

CudaUsedMemoryProbe::CudaUsedMemoryProbe() { built_without_cuda(); }
CudaUsedMemoryProbe::~CudaUsedMemoryProbe() = default;
std::size_t CudaUsedMemoryProbe::used_bytes() { built_without_cuda(); }
const char* CudaUsedMemoryProbe::method() const { return "none"; }

}  // namespace oomlab::detail
