// Internal: the CUDA half of harness/device behind plain C++ types, so device.cpp and
// monitor.cpp compile without CUDA headers. cuda_backend.cpp implements it with the runtime
// API (CUDA builds); no_cuda_backend.cpp implements it for CPU-only builds.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/device/device.hpp"
#include "harness/memory/source.hpp"

namespace oomlab::detail {

// Number of usable CUDA devices; 0 with the reason in `why` (no driver, no device, CPU build).
// Never throws.
int cuda_device_count(std::string* why);

DeviceInfo cuda_device_info();

// Whether the driver can load this binary's device code on the current GPU: a kernel built like
// every other, asked with cudaFuncGetAttributes (cuda_code_probe.cu). Never throws.
struct CudaCodeProbe {
  bool loaded = false;
  int ptx_version = 0;     // the PTX architecture the loaded code came from: 75, 80, 90
  int binary_version = 0;  // the SASS it runs as: 90 for compute_80 PTX JIT-compiled on an H200
  std::string error;       // the cudaError name when !loaded ("cudaErrorNoKernelImageForDevice")
};
CudaCodeProbe cuda_probe_code();

memory::StreamHandle cuda_create_stream();
void cuda_destroy_stream(memory::StreamHandle stream);
void cuda_copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                     memory::StreamHandle stream);
void cuda_memset_async(void* dst, int value, std::size_t bytes, memory::StreamHandle stream);
void cuda_stream_synchronize(memory::StreamHandle stream);
// Pinned host memory (cudaHostAlloc / cudaFreeHost; free never throws).
void* cuda_host_alloc(std::size_t bytes);
void cuda_host_free(void* ptr);
// Events for ordering streams (timing disabled); handles are cudaEvent_t as integers.
std::uintptr_t cuda_event_create();
void cuda_event_destroy(std::uintptr_t event);  // never throws
void cuda_event_record(std::uintptr_t event, memory::StreamHandle stream);
void cuda_stream_wait_event(memory::StreamHandle stream, std::uintptr_t event);
void cuda_event_synchronize(std::uintptr_t event);
// Timing events for profiling; elapsed waits for `stop` and returns milliseconds.
std::uintptr_t cuda_timing_event_create();
double cuda_event_elapsed_ms(std::uintptr_t start, std::uintptr_t stop);

// Device-level used bytes as nvidia-smi shows them (NVML where built in, else
// total - free from cudaMemGetInfo). Called from the monitor thread. Throws CudaError.
class CudaUsedMemoryProbe {
 public:
  CudaUsedMemoryProbe();
  ~CudaUsedMemoryProbe();
  CudaUsedMemoryProbe(const CudaUsedMemoryProbe&) = delete;
  CudaUsedMemoryProbe& operator=(const CudaUsedMemoryProbe&) = delete;
  std::size_t used_bytes();
  const char* method() const;  // "nvml" or "cudaMemGetInfo"

 private:
  int device_ = 0;
  void* nvml_device_ = nullptr;  // nvmlDevice_t when NVML initialised, else null
};

}  // namespace oomlab::detail
