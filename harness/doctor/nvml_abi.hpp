// The few NVML types, constants and entry points the doctor uses, declared here with the ABI of
// NVIDIA's nvml.h (NVML API reference, "Device Queries" and "Initialization and Cleanup"), so the
// build needs no nvml.h: NVML comes with the driver and is loaded at run time (nvml_library.hpp).
// Every value below is fixed by that ABI; nothing here may be renumbered.
#pragma once

namespace oomlab::doctor::nvml {

using Return = int;                 // nvmlReturn_t: an enum, int-sized
using EnableState = int;            // nvmlEnableState_t: NVML_FEATURE_DISABLED / _ENABLED
struct DeviceHandle;                // struct nvmlDevice_st, opaque
using Device = DeviceHandle*;       // nvmlDevice_t

constexpr Return kSuccess = 0;              // NVML_SUCCESS
constexpr Return kNotSupported = 3;         // NVML_ERROR_NOT_SUPPORTED
constexpr Return kInsufficientSize = 7;     // NVML_ERROR_INSUFFICIENT_SIZE
constexpr EnableState kFeatureEnabled = 1;  // NVML_FEATURE_ENABLED
constexpr unsigned int kMigEnable = 1;      // NVML_DEVICE_MIG_ENABLE
constexpr unsigned kDriverVersionBufferSize = 80;               // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
constexpr unsigned long long kValueNotAvailable = ~0ULL;        // NVML_VALUE_NOT_AVAILABLE, (-1)

// nvmlProcessInfo_t as the _v3 process queries fill it (nvmlProcessInfo_v2_t's layout).
struct ProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes, or kValueNotAvailable
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// The entry points, by their exported names.
using InitFn = Return (*)();                                          // nvmlInit_v2
using ShutdownFn = Return (*)();                                      // nvmlShutdown
using ErrorStringFn = const char* (*)(Return);                        // nvmlErrorString
using DriverVersionFn = Return (*)(char* version, unsigned int length);  // nvmlSystemGetDriverVersion
using HandleByBusIdFn = Return (*)(const char* pci_bus_id, Device*);  // nvmlDeviceGetHandleByPciBusId_v2
using MigModeFn = Return (*)(Device, unsigned int* current, unsigned int* pending);  // nvmlDeviceGetMigMode
using EccModeFn = Return (*)(Device, EnableState* current, EnableState* pending);   // nvmlDeviceGetEccMode
using PersistenceModeFn = Return (*)(Device, EnableState* mode);      // nvmlDeviceGetPersistenceMode
// nvmlDeviceGetComputeRunningProcesses_v3, nvmlDeviceGetGraphicsRunningProcesses_v3
using ProcessesFn = Return (*)(Device, unsigned int* count, ProcessInfo* infos);

struct Api {
  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
  ErrorStringFn error_string = nullptr;
  DriverVersionFn driver_version = nullptr;
  HandleByBusIdFn handle_by_bus_id = nullptr;
  MigModeFn mig_mode = nullptr;
  EccModeFn ecc_mode = nullptr;
  PersistenceModeFn persistence_mode = nullptr;
  ProcessesFn compute_processes = nullptr;
  ProcessesFn graphics_processes = nullptr;
};

}  // namespace oomlab::doctor::nvml
