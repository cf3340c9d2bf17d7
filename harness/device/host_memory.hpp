// The host's memory as the kernel reports it (/proc/meminfo): what a run that keeps gigabytes in
// host memory (the offloaded optimizer's pinned state) can count on before it allocates them.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

namespace oomlab {

struct HostMemory {
  std::size_t total = 0;      // MemTotal
  std::size_t available = 0;  // MemAvailable: what can be allocated without swapping
};

// nullopt where the file is missing or has no MemTotal/MemAvailable (not Linux, a container
// without /proc).
std::optional<HostMemory> read_host_memory(const std::string& meminfo_path = "/proc/meminfo");

// Empty when `needed` bytes fit in `memory.available`; otherwise one line saying what `what`
// needs, what the host has, and what to do.
std::string host_memory_shortfall(std::size_t needed, const HostMemory& memory, const std::string& what);

}  // namespace oomlab
