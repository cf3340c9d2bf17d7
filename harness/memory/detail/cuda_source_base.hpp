// Shared by the cuda and cuda_vmm sources (compiled only with CUDA): whole segments from
// cudaMalloc, stream events, and the external-bytes measurement.
#pragma once
#include <cuda_runtime_api.h>

#include <atomic>
#include <string>

#include "harness/memory/cuda_check.hpp"
#include "harness/memory/source.hpp"

namespace oomlab::memory::detail {

// Throws std::runtime_error("no CUDA device") when no device can be used.
inline void require_cuda_device() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    throw std::runtime_error(std::string("no CUDA device") +
                             (status != cudaSuccess ? std::string(" (") + cudaGetErrorString(status) + ")" : ""));
  }
}

class CudaSourceBase : public MemorySource {
 protected:
  // Bytes this source holds on the device now, subtracted from the device's used memory.
  std::atomic<std::size_t> held_bytes_{0};

 private:
  void* do_allocate(std::size_t bytes) override {
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, bytes);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear it: an OOM here is an answer, not a sticky error
      return nullptr;
    }
    OOMLAB_CUDA_CHECK(status);
    held_bytes_ += bytes;
    return ptr;
  }
  void do_deallocate(void* ptr, std::size_t bytes) override {
    OOMLAB_CUDA_CHECK(cudaFree(ptr));
    held_bytes_ -= bytes;
  }

  EventHandle do_record_event(StreamHandle stream) override {
    cudaEvent_t event = nullptr;
    OOMLAB_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    OOMLAB_CUDA_CHECK(cudaEventRecord(event, reinterpret_cast<cudaStream_t>(stream)));
    return reinterpret_cast<EventHandle>(event);
  }
  bool do_event_complete(EventHandle event) override {
    cudaError_t status = cudaEventQuery(reinterpret_cast<cudaEvent_t>(event));
    if (status == cudaErrorNotReady) return false;
    OOMLAB_CUDA_CHECK(status);
    return true;
  }
  void do_destroy_event(EventHandle event) override {
    OOMLAB_CUDA_CHECK(cudaEventDestroy(reinterpret_cast<cudaEvent_t>(event)));
  }

  std::size_t do_external_bytes() const override {
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    std::size_t used = total_bytes - free_bytes;
    std::size_t held = held_bytes_.load();
    return used > held ? used - held : 0;
  }
  std::size_t do_capacity_bytes() const override {
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return total_bytes;
  }
  bool do_has_backing() const override { return true; }
};

}  // namespace oomlab::memory::detail
