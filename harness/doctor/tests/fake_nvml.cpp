// A stand-in for libnvidia-ml.so.1 with the entry points the doctor loads, answering as an H200
// with one pending MIG change, another user's job and a display server would: the doctor's NVML
// path (dlopen, dlsym, the calls, the INSUFFICIENT_SIZE protocol) runs on a machine without a GPU.
// It shares nvml_abi.hpp with the doctor, so it checks the logic, not the ABI against nvml.h.
#include <cstring>

#include "harness/doctor/nvml_abi.hpp"

namespace nvml = oomlab::doctor::nvml;

namespace {

constexpr const char* kBusId = "00000000:19:00.0";
constexpr nvml::Return kNotFound = 6;  // NVML_ERROR_NOT_FOUND
nvml::DeviceHandle* const kDevice = reinterpret_cast<nvml::DeviceHandle*>(0x1000);

// pid 1000 plays the doctor itself; 4242 is listed twice (compute and graphics).
const nvml::ProcessInfo kCompute[] = {{4242, 3ULL << 30, ~0u, ~0u},
                                      {777, nvml::kValueNotAvailable, ~0u, ~0u},
                                      {1000, 500ULL << 20, ~0u, ~0u}};
const nvml::ProcessInfo kGraphics[] = {{4242, 3ULL << 30, ~0u, ~0u}, {55, 64ULL << 20, ~0u, ~0u}};

template <unsigned N>
nvml::Return copy_processes(const nvml::ProcessInfo (&list)[N], unsigned int* count, nvml::ProcessInfo* infos) {
  if (*count < N) {
    *count = N;
    return nvml::kInsufficientSize;
  }
  std::memcpy(infos, list, sizeof list);
  *count = N;
  return nvml::kSuccess;
}

}  // namespace

extern "C" {

nvml::Return nvmlInit_v2() { return nvml::kSuccess; }
nvml::Return nvmlShutdown() { return nvml::kSuccess; }
const char* nvmlErrorString(nvml::Return status) { return status == kNotFound ? "Not Found" : "Unknown Error"; }

nvml::Return nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (length < 8) return nvml::kInsufficientSize;
  std::strcpy(version, "580.159");
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvml::Device* device) {
  if (std::strcmp(bus_id, kBusId) != 0) return kNotFound;
  *device = kDevice;
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceGetMigMode(nvml::Device, unsigned int* current, unsigned int* pending) {
  *current = 0;
  *pending = nvml::kMigEnable;
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceGetEccMode(nvml::Device, nvml::EnableState* current, nvml::EnableState* pending) {
  *current = *pending = nvml::kFeatureEnabled;
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceGetPersistenceMode(nvml::Device, nvml::EnableState*) { return nvml::kNotSupported; }

nvml::Return nvmlDeviceGetComputeRunningProcesses_v3(nvml::Device, unsigned int* count, nvml::ProcessInfo* infos) {
  return copy_processes(kCompute, count, infos);
}

nvml::Return nvmlDeviceGetGraphicsRunningProcesses_v3(nvml::Device, unsigned int* count, nvml::ProcessInfo* infos) {
  return copy_processes(kGraphics, count, infos);
}

}  // extern "C"
