#include "harness/device/host_memory.hpp"

#include <fstream>
#include <sstream>

#include "harness/memory/size.hpp"

namespace oomlab {

std::optional<HostMemory> read_host_memory(const std::string& meminfo_path) {
  std::ifstream file(meminfo_path);
  if (!file) return std::nullopt;
  std::optional<std::size_t> total, available;
  std::string line;
  while (std::getline(file, line)) {  // "MemAvailable:   123456 kB"
    std::istringstream fields(line);
    std::string key, unit;
    unsigned long long kib = 0;
    if (!(fields >> key >> kib >> unit) || unit != "kB") continue;
    if (key == "MemTotal:") total = static_cast<std::size_t>(kib) << 10;
    if (key == "MemAvailable:") available = static_cast<std::size_t>(kib) << 10;
  }
  if (!total || !available) return std::nullopt;
  return HostMemory{*total, *available};
}

std::string host_memory_shortfall(std::size_t needed, const HostMemory& memory, const std::string& what) {
  if (needed <= memory.available) return "";
  return what + " needs " + format_size(needed) + " of host memory; this machine has " +
         format_size(memory.available) + " available (of " + format_size(memory.total) +
         "): free host memory, or keep the optimizer on the GPU (8-bit moments, LoRA)";
}

}  // namespace oomlab
