// The CUDA half of gathering facts in a CPU-only build: no versions, no GPU.
#include "harness/doctor/cuda_facts.hpp"

#include "harness/device/device.hpp"

namespace oomlab::doctor::detail {

void read_cuda_versions(VersionFacts&) {}

GpuFacts read_gpu_identity() {
  GpuFacts gpu;
  gpu.unavailable_reason = cuda_unavailable_reason();
  return gpu;
}

void read_gpu_memory(GpuFacts&) {}

std::optional<std::size_t> measure_context_bytes(int, std::size_t, std::string& error) {
  error = "oomlab was built without CUDA";
  return std::nullopt;
}

}  // namespace oomlab::doctor::detail
