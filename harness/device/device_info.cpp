// query_device_info: what the run record says about the machine a variant ran on.
#include <fstream>
#include <stdexcept>
#include <string>

#include "harness/device/cuda_backend.hpp"
#include "harness/device/device.hpp"

namespace oomlab {

namespace {

// The first "model name" of /proc/cpuinfo; "host CPU" where it cannot be read (not Linux).
std::string host_cpu_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) break;
    auto start = line.find_first_not_of(" \t", colon + 1);
    if (start == std::string::npos) break;
    return line.substr(start);
  }
  return "host CPU";
}

// MemTotal of /proc/meminfo in bytes; 0 where it cannot be read.
std::size_t host_total_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  return 0;
}

}  // namespace

DeviceInfo query_device_info(DeviceKind kind) {
  DeviceInfo info;
  info.kind = device_kind_name(kind);
  switch (kind) {
    case DeviceKind::cuda: {
      std::string why;
      if (detail::cuda_device_count(&why) <= 0) {
        throw std::runtime_error("--device cuda: no usable CUDA device (" + why + ")");
      }
      return detail::cuda_device_info();
    }
    case DeviceKind::host:
      info.name = host_cpu_name();
      info.total_memory = host_total_memory();
      return info;
    case DeviceKind::dry:
      info.name = "dry (no backing)";
      return info;
  }
  return info;
}

}  // namespace oomlab
