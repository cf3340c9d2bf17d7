// NVML facts through the entry points NvmlLibrary loaded. Any NVML failure becomes
// NvmlFacts::error or an unknown mode, never an exception: the doctor reports what it could read.
#include "harness/doctor/nvml_facts.hpp"

#include <algorithm>
#include <vector>

#include "harness/doctor/process_info.hpp"

namespace oomlab::doctor::detail {
namespace {

Mode mode_of(nvml::Return status, bool enabled) {
  if (status == nvml::kNotSupported) return Mode::not_supported;
  if (status != nvml::kSuccess) return Mode::unknown;
  return enabled ? Mode::on : Mode::off;
}

ModeFact read_mig(const nvml::Api& api, nvml::Device device) {
  unsigned int current = 0, pending = 0;
  nvml::Return status = api.mig_mode(device, &current, &pending);
  return {mode_of(status, current == nvml::kMigEnable), mode_of(status, pending == nvml::kMigEnable)};
}

ModeFact read_ecc(const nvml::Api& api, nvml::Device device) {
  nvml::EnableState current = 0, pending = 0;
  nvml::Return status = api.ecc_mode(device, &current, &pending);
  return {mode_of(status, current == nvml::kFeatureEnabled), mode_of(status, pending == nvml::kFeatureEnabled)};
}

ModeFact read_persistence(const nvml::Api& api, nvml::Device device) {
  nvml::EnableState mode = 0;
  nvml::Return status = api.persistence_mode(device, &mode);
  return {mode_of(status, mode == nvml::kFeatureEnabled), Mode::unknown};
}

// One of NVML's process lists; false when NVML could not give it.
bool query_processes(nvml::ProcessesFn query, nvml::Device device, std::vector<nvml::ProcessInfo>& out) {
  for (int attempt = 0; attempt < 3; ++attempt) {  // the list can grow between the two calls
    unsigned int count = static_cast<unsigned int>(out.size());
    nvml::Return status = query(device, &count, out.empty() ? nullptr : out.data());
    if (status == nvml::kSuccess) {
      out.resize(std::min<std::size_t>(count, out.size()));
      return true;
    }
    if (status != nvml::kInsufficientSize) return false;
    out.resize(count + 8);
  }
  return false;
}

// Compute processes with their bytes, then graphics-only clients (a display server).
bool read_processes(const nvml::Api& api, nvml::Device device, int self_pid, std::vector<GpuProcess>& processes) {
  std::vector<nvml::ProcessInfo> compute, graphics;
  if (!query_processes(api.compute_processes, device, compute) ||
      !query_processes(api.graphics_processes, device, graphics)) {
    return false;
  }
  auto add = [&](const nvml::ProcessInfo& info, bool graphics_only) {
    const int pid = static_cast<int>(info.pid);
    if (pid == self_pid) return;
    for (const GpuProcess& known : processes) {
      if (known.pid == pid) return;
    }
    GpuProcess process;
    process.pid = pid;
    process.graphics_only = graphics_only;
    if (info.usedGpuMemory != nvml::kValueNotAvailable) process.bytes = static_cast<std::size_t>(info.usedGpuMemory);
    if (!read_process_info("/proc", pid, process)) process.name.clear();  // another PID namespace
    processes.push_back(process);
  };
  for (const nvml::ProcessInfo& info : compute) add(info, false);
  for (const nvml::ProcessInfo& info : graphics) add(info, true);
  return true;
}

std::string error_text(const nvml::Api& api, nvml::Return status) {
  const char* text = api.error_string(status);
  return text != nullptr ? text : "NVML error " + std::to_string(status);
}

}  // namespace

NvmlFacts read_nvml_facts(const NvmlLibrary& nvml, const std::string& pci_bus_id, int self_pid,
                          std::string& driver_release) {
  NvmlFacts facts;
  if (!nvml.loaded()) {
    facts.error = nvml.error();
    return facts;
  }
  const nvml::Api& api = nvml.api();
  nvml::Return status = api.init();
  if (status != nvml::kSuccess) {
    facts.error = "NVML: nvmlInit: " + error_text(api, status);
    return facts;
  }
  char release[nvml::kDriverVersionBufferSize + 1] = {};
  if (api.driver_version(release, nvml::kDriverVersionBufferSize) == nvml::kSuccess) driver_release = release;
  nvml::Device device = nullptr;
  status = api.handle_by_bus_id(pci_bus_id.c_str(), &device);
  if (status != nvml::kSuccess) {
    facts.error = "NVML: no device at PCI bus id " + pci_bus_id.substr(0, 32) + ": " + error_text(api, status);
  } else {
    facts.mig = read_mig(api, device);
    facts.ecc = read_ecc(api, device);
    facts.persistence = read_persistence(api, device);
    facts.processes_known = read_processes(api, device, self_pid, facts.processes);
  }
  api.shutdown();
  return facts;
}

}  // namespace oomlab::doctor::detail
