// Compiled only with the CUDA backend (runtime API only: plain C++ against cudart's headers).
#include "scenarios/spawn/cuda_support.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <string>

#include "harness/memory/cuda_check.hpp"

namespace oomlab::scenarios::spawn_cuda {
namespace {

std::string error_text(const char* call, cudaError_t code) {
  return std::string(call) + " failed: " + cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")";
}

// The NVML entry points used here, with the ABI of nvml.h (nvmlProcessInfo_v2_t layout, which
// nvmlDeviceGetComputeRunningProcesses_v3 fills).
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
using NvmlDevice = void*;
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlByBusId = int (*)(const char*, NvmlDevice*);
using NvmlProcesses = int (*)(NvmlDevice, unsigned int*, NvmlProcessInfo*);
constexpr int kNvmlSuccess = 0;
constexpr unsigned long long kNvmlValueNotAvailable = ULLONG_MAX;

}  // namespace

std::string create_context() {
  cudaError_t code = cudaSetDevice(0);
  if (code == cudaSuccess) code = cudaFree(nullptr);
  if (code != cudaSuccess) {
    (void)cudaGetLastError();
    return error_text("cudaFree(0)", code);
  }
  return "";
}

std::string first_call_in_forked_child() {
  void* pinned = nullptr;
  cudaError_t code = cudaHostAlloc(&pinned, 1 << 20, cudaHostAllocDefault);
  if (code != cudaSuccess) return error_text("cudaHostAlloc", code);
  cudaFreeHost(pinned);
  return "";
}

std::size_t device_used_bytes() {
  std::size_t free_bytes = 0, total_bytes = 0;
  OOMLAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return total_bytes - free_bytes;
}

std::optional<std::map<int, std::size_t>> nvml_process_bytes(const std::vector<int>& pids) {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) return std::nullopt;
  auto init = reinterpret_cast<NvmlInit>(dlsym(library, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<NvmlShutdown>(dlsym(library, "nvmlShutdown"));
  auto by_bus_id = reinterpret_cast<NvmlByBusId>(dlsym(library, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto processes = reinterpret_cast<NvmlProcesses>(dlsym(library, "nvmlDeviceGetComputeRunningProcesses_v3"));
  std::optional<std::map<int, std::size_t>> result;
  if (init && shutdown && by_bus_id && processes && init() == kNvmlSuccess) {
    char bus_id[64] = {};
    NvmlDevice device = nullptr;
    int cuda_device = 0;
    if (cudaGetDevice(&cuda_device) == cudaSuccess &&
        cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, cuda_device) == cudaSuccess &&
        by_bus_id(bus_id, &device) == kNvmlSuccess) {
      std::vector<NvmlProcessInfo> infos(256);
      unsigned int count = static_cast<unsigned int>(infos.size());
      if (processes(device, &count, infos.data()) == kNvmlSuccess) {
        std::map<int, std::size_t> found;
        for (unsigned int i = 0; i < count; ++i) {
          for (int pid : pids) {
            if (static_cast<int>(infos[i].pid) == pid &&
                infos[i].usedGpuMemory != kNvmlValueNotAvailable) {
              found[pid] = static_cast<std::size_t>(infos[i].usedGpuMemory);
            }
          }
        }
        // Our own process has a context, so NVML must list it; if not, its pids are another
        // namespace's and nothing it says can be matched to ours.
        if (found.count(static_cast<int>(getpid()))) result = found;
      }
    }
    shutdown();
  }
  dlclose(library);
  return result;
}

}  // namespace oomlab::scenarios::spawn_cuda
