// The CUDA half of gathering facts (compiled only when OOMLAB_HAVE_CUDA): runtime API only.
#include "harness/doctor/cuda_facts.hpp"

#include <cuda_runtime_api.h>

#include "harness/device/device.hpp"

namespace oomlab::doctor::detail {
namespace {

// "cudaErrorMemoryAllocation (out of memory)": the user's words, without file:line.
std::string error_text(cudaError_t status) {
  (void)cudaGetLastError();
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

}  // namespace

void read_cuda_versions(VersionFacts& versions) {
  versions.toolkit = CUDART_VERSION;
  // Without a driver this succeeds with 0 (cudart could not load libcuda).
  if (cudaDriverGetVersion(&versions.driver_cuda) != cudaSuccess) versions.driver_cuda = 0;
  if (cudaRuntimeGetVersion(&versions.runtime) != cudaSuccess) versions.runtime = 0;
  (void)cudaGetLastError();
}

GpuFacts read_gpu_identity() {
  GpuFacts gpu;
  gpu.available = cuda_available();
  if (!gpu.available) {
    gpu.unavailable_reason = cuda_unavailable_reason();
    return gpu;
  }
  cudaDeviceProp props{};
  char bus_id[32] = {};
  cudaError_t status = cudaGetDeviceCount(&gpu.device_count);
  if (status == cudaSuccess) status = cudaGetDevice(&gpu.device);
  if (status == cudaSuccess) status = cudaGetDeviceProperties(&props, gpu.device);
  if (status == cudaSuccess) status = cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, gpu.device);
  if (status != cudaSuccess) {
    gpu.available = false;
    gpu.unavailable_reason = "cannot query the device: " + error_text(status);
    return gpu;
  }
  gpu.name = props.name;
  gpu.compute_major = props.major;
  gpu.compute_minor = props.minor;
  gpu.pci_bus_id = bus_id;
  return gpu;
}

void read_gpu_memory(GpuFacts& gpu) {
  // cudaSetDevice creates the primary context (CUDA 12+); cudaFree(0) makes sure of it.
  cudaError_t status = cudaSetDevice(gpu.device);
  if (status == cudaSuccess) status = cudaFree(nullptr);
  if (status == cudaSuccess) status = cudaMemGetInfo(&gpu.free_bytes, &gpu.total_bytes);
  if (status != cudaSuccess) {
    gpu.available = false;
    gpu.unavailable_reason = "cannot create a CUDA context: " + error_text(status);
    return;
  }
  gpu.context_bytes = measure_context_bytes(gpu.device, gpu.free_bytes, gpu.context_error);
}

}  // namespace oomlab::doctor::detail
