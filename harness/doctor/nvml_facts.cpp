// NVML facts (compiled only when OOMLAB_HAVE_NVML). Any NVML failure becomes NvmlFacts::error or
// an unknown mode, never an exception: the doctor reports what it could read.
#include "harness/doctor/nvml_facts.hpp"

#include <nvml.h>

#include <vector>

#include "harness/doctor/process_info.hpp"

namespace oomlab::doctor::detail {
namespace {

Mode mode_of(nvmlReturn_t status, bool enabled) {
  if (status == NVML_ERROR_NOT_SUPPORTED) return Mode::not_supported;
  if (status != NVML_SUCCESS) return Mode::unknown;
  return enabled ? Mode::on : Mode::off;
}

ModeFact read_mig(nvmlDevice_t device) {
  unsigned int current = 0, pending = 0;
  nvmlReturn_t status = nvmlDeviceGetMigMode(device, &current, &pending);
  return {mode_of(status, current == NVML_DEVICE_MIG_ENABLE), mode_of(status, pending == NVML_DEVICE_MIG_ENABLE)};
}

ModeFact read_ecc(nvmlDevice_t device) {
  nvmlEnableState_t current = NVML_FEATURE_DISABLED, pending = NVML_FEATURE_DISABLED;
  nvmlReturn_t status = nvmlDeviceGetEccMode(device, &current, &pending);
  return {mode_of(status, current == NVML_FEATURE_ENABLED), mode_of(status, pending == NVML_FEATURE_ENABLED)};
}

ModeFact read_persistence(nvmlDevice_t device) {
  nvmlEnableState_t mode = NVML_FEATURE_DISABLED;
  nvmlReturn_t status = nvmlDeviceGetPersistenceMode(device, &mode);
  return {mode_of(status, mode == NVML_FEATURE_ENABLED), Mode::unknown};
}

using ProcessQuery = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);

// One of NVML's process lists; false when NVML could not give it.
bool query_processes(ProcessQuery query, nvmlDevice_t device, std::vector<nvmlProcessInfo_t>& out) {
  for (int attempt = 0; attempt < 3; ++attempt) {  // the list can grow between the two calls
    unsigned int count = static_cast<unsigned int>(out.size());
    nvmlReturn_t status = query(device, &count, out.empty() ? nullptr : out.data());
    if (status == NVML_SUCCESS) {
      out.resize(count);
      return true;
    }
    if (status != NVML_ERROR_INSUFFICIENT_SIZE) return false;
    out.resize(count + 8);
  }
  return false;
}

// Compute processes with their bytes, then graphics-only clients (a display server).
bool read_processes(nvmlDevice_t device, int self_pid, std::vector<GpuProcess>& processes) {
  std::vector<nvmlProcessInfo_t> compute, graphics;
  if (!query_processes(nvmlDeviceGetComputeRunningProcesses_v3, device, compute) ||
      !query_processes(nvmlDeviceGetGraphicsRunningProcesses_v3, device, graphics)) {
    return false;
  }
  auto add = [&](const nvmlProcessInfo_t& info, bool graphics_only) {
    const int pid = static_cast<int>(info.pid);
    if (pid == self_pid) return;
    for (const GpuProcess& known : processes) {
      if (known.pid == pid) return;
    }
    GpuProcess process;
    process.pid = pid;
    process.graphics_only = graphics_only;
    if (info.usedGpuMemory != static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE)) {
      process.bytes = static_cast<std::size_t>(info.usedGpuMemory);
    }
    if (!read_process_info("/proc", pid, process)) process.name.clear();  // another PID namespace
    processes.push_back(process);
  };
  for (const nvmlProcessInfo_t& info : compute) add(info, false);
  for (const nvmlProcessInfo_t& info : graphics) add(info, true);
  return true;
}

}  // namespace

NvmlFacts read_nvml_facts(const std::string& pci_bus_id, int self_pid, std::string& driver_release) {
  NvmlFacts facts;
  nvmlReturn_t status = nvmlInit_v2();
  if (status != NVML_SUCCESS) {
    facts.error = std::string("nvmlInit: ") + nvmlErrorString(status);
    return facts;
  }
  char release[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (nvmlSystemGetDriverVersion(release, sizeof release) == NVML_SUCCESS) driver_release = release;
  nvmlDevice_t device{};
  status = nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.c_str(), &device);
  if (status != NVML_SUCCESS) {
    facts.error = std::string("no device at PCI bus id ") + pci_bus_id.substr(0, 32) + ": " + nvmlErrorString(status);
  } else {
    facts.mig = read_mig(device);
    facts.ecc = read_ecc(device);
    facts.persistence = read_persistence(device);
    facts.processes_known = read_processes(device, self_pid, facts.processes);
  }
  nvmlShutdown();
  return facts;
}

}  // namespace oomlab::doctor::detail
