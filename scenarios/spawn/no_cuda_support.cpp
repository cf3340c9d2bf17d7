// CPU-only build: nothing here is reached on host/dry; the calls say why they cannot work.
#include "scenarios/spawn/cuda_support.hpp"

namespace oomlab::scenarios::spawn_cuda {

std::string create_context() { return "oomlab was built without CUDA"; }
std::string first_call_in_forked_child() { return "oomlab was built without CUDA"; }
std::size_t device_used_bytes() { return 0; }
std::optional<std::map<int, std::size_t>> nvml_process_bytes(const std::vector<int>&) {
  return std::nullopt;
}

}  // namespace oomlab::scenarios::spawn_cuda
