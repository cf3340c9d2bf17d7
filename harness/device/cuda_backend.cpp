// The CUDA half of harness/device (compiled only when OOMLAB_HAVE_CUDA): runtime API only.
#include "harness/device/cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <stdexcept>

#include "harness/memory/cuda_check.hpp"

#if OOMLAB_WITH_NVML
#include <nvml.h>
#endif

namespace oomlab::detail {

namespace {

cudaStream_t to_cuda(memory::StreamHandle stream) {
  return reinterpret_cast<cudaStream_t>(stream);
}

cudaMemcpyKind to_cuda(CopyKind kind) {
  switch (kind) {
    case CopyKind::host_to_device: return cudaMemcpyHostToDevice;
    case CopyKind::device_to_host: return cudaMemcpyDeviceToHost;
    case CopyKind::device_to_device: return cudaMemcpyDeviceToDevice;
    case CopyKind::host_to_host: return cudaMemcpyHostToHost;
  }
  return cudaMemcpyDefault;
}

}  // namespace

int cuda_device_count(std::string* why) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ")";
    return 0;
  }
  if (count == 0 && why) *why = "cudaGetDeviceCount: 0 devices";
  return count;
}

DeviceInfo cuda_device_info() {
  int device = 0;
  OOMLAB_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp props{};
  OOMLAB_CUDA_CHECK(cudaGetDeviceProperties(&props, device));
  DeviceInfo info;
  info.kind = "cuda";
  info.name = props.name;
  info.compute_major = props.major;
  info.compute_minor = props.minor;
  info.total_memory = props.totalGlobalMem;
  info.max_shared_bytes_per_block = props.sharedMemPerBlockOptin;
  OOMLAB_CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  OOMLAB_CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  return info;
}

memory::StreamHandle cuda_create_stream() {
  cudaStream_t stream = nullptr;
  OOMLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return reinterpret_cast<memory::StreamHandle>(stream);
}

void cuda_destroy_stream(memory::StreamHandle stream) {
  if (stream != 0) OOMLAB_CUDA_CHECK(cudaStreamDestroy(to_cuda(stream)));
}

void cuda_copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                     memory::StreamHandle stream) {
  OOMLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, to_cuda(kind), to_cuda(stream)));
}

void cuda_memset_async(void* dst, int value, std::size_t bytes, memory::StreamHandle stream) {
  OOMLAB_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, to_cuda(stream)));
}

void cuda_stream_synchronize(memory::StreamHandle stream) {
  OOMLAB_CUDA_CHECK(cudaStreamSynchronize(to_cuda(stream)));
}

void* cuda_host_alloc(std::size_t bytes) {
  void* ptr = nullptr;
  OOMLAB_CUDA_CHECK(cudaHostAlloc(&ptr, bytes, cudaHostAllocDefault));
  return ptr;
}

void cuda_host_free(void* ptr) {
  if (ptr) cudaFreeHost(ptr);
}

std::uintptr_t cuda_event_create() {
  cudaEvent_t event = nullptr;
  OOMLAB_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return reinterpret_cast<std::uintptr_t>(event);
}

void cuda_event_destroy(std::uintptr_t event) {
  if (event) cudaEventDestroy(reinterpret_cast<cudaEvent_t>(event));
}

void cuda_event_record(std::uintptr_t event, memory::StreamHandle stream) {
  OOMLAB_CUDA_CHECK(cudaEventRecord(reinterpret_cast<cudaEvent_t>(event), to_cuda(stream)));
}

void cuda_stream_wait_event(memory::StreamHandle stream, std::uintptr_t event) {
  OOMLAB_CUDA_CHECK(cudaStreamWaitEvent(to_cuda(stream), reinterpret_cast<cudaEvent_t>(event), 0));
}

void cuda_event_synchronize(std::uintptr_t event) {
  OOMLAB_CUDA_CHECK(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(event)));
}

std::uintptr_t cuda_timing_event_create() {
  cudaEvent_t event = nullptr;
  OOMLAB_CUDA_CHECK(cudaEventCreate(&event));
  return reinterpret_cast<std::uintptr_t>(event);
}

double cuda_event_elapsed_ms(std::uintptr_t start, std::uintptr_t stop) {
  OOMLAB_CUDA_CHECK(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(stop)));
  float ms = 0;
  OOMLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, reinterpret_cast<cudaEvent_t>(start),
                                        reinterpret_cast<cudaEvent_t>(stop)));
  return ms;
}

CudaUsedMemoryProbe::CudaUsedMemoryProbe() {
  OOMLAB_CUDA_CHECK(cudaGetDevice(&device_));
#if OOMLAB_WITH_NVML
  // NVML numbers devices differently from CUDA (CUDA_VISIBLE_DEVICES): match by PCI bus id.
  // Any NVML failure falls back to cudaMemGetInfo.
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device_) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  if (nvmlInit_v2() != NVML_SUCCESS) return;
  nvmlDevice_t handle{};
  if (nvmlDeviceGetHandleByPciBusId_v2(bus_id, &handle) != NVML_SUCCESS) {
    nvmlShutdown();
    return;
  }
  nvml_device_ = handle;
#endif
}

CudaUsedMemoryProbe::~CudaUsedMemoryProbe() {
#if OOMLAB_WITH_NVML
  if (nvml_device_) nvmlShutdown();
#endif
}

std::size_t CudaUsedMemoryProbe::used_bytes() {
#if OOMLAB_WITH_NVML
  if (nvml_device_) {
    nvmlMemory_t memory{};
    if (nvmlDeviceGetMemoryInfo(static_cast<nvmlDevice_t>(nvml_device_), &memory) ==
        NVML_SUCCESS) {
      return static_cast<std::size_t>(memory.used);
    }
  }
#endif
  // The monitor thread has no current device until told: use the run's device.
  OOMLAB_CUDA_CHECK(cudaSetDevice(device_));
  std::size_t free_bytes = 0, total_bytes = 0;
  OOMLAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return total_bytes - free_bytes;
}

const char* CudaUsedMemoryProbe::method() const {
  return nvml_device_ ? "nvml" : "cudaMemGetInfo";
}

}  // namespace oomlab::detail
