// The few CUDA calls the spawn scenario makes itself, behind a header with no CUDA types, so
// the scenario compiles without CUDA (no_cuda_support.cpp answers "built without CUDA").
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace oomlab::scenarios::spawn_cuda {

// Creates this process's CUDA context on device 0 (cudaFree(0), what a static device object or
// an early torch.cuda call does). Returns "" on success, else the error.
std::string create_context();
// A forked worker's first CUDA call: pinning its output buffer (cudaHostAlloc). Returns "" on
// success, else "cudaHostAlloc failed: cudaErrorInitializationError (...)".
std::string first_call_in_forked_child();
// Device-level used bytes (total - free from cudaMemGetInfo): every process's contexts included.
std::size_t device_used_bytes();
// Device memory per process from NVML (loaded with dlopen, so no link dependency), for the
// given pids. nullopt when NVML is absent or cannot attribute memory to our pids (a container's
// PID namespace): callers fall back to cudaMemGetInfo deltas.
std::optional<std::map<int, std::size_t>> nvml_process_bytes(const std::vector<int>& pids);

}  // namespace oomlab::scenarios::spawn_cuda
