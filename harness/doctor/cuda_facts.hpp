// Internal: the CUDA half of gathering facts. cuda_facts.cpp (CUDA builds, runtime API only) or
// no_cuda_facts.cpp (CPU-only builds) implements it. Nothing here throws.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include "harness/doctor/machine_facts.hpp"

namespace oomlab::doctor::detail {

// Driver, runtime and toolkit versions; creates no context.
void read_cuda_versions(VersionFacts& versions);

// Availability, name, capability and PCI bus id of the current device; creates no context.
GpuFacts read_gpu_identity();

// Creates this process's context, reads total and free memory, and measures one context in a
// second process. A context that cannot be created (the card is full) makes the GPU unusable.
void read_gpu_memory(GpuFacts& gpu);

// context_probe.cpp: a spawned worker creates its context while ours is alive and reports the
// free memory it sees; the difference from `free_with_ours` is one context. Needs main() to
// dispatch workers first (harness/process/worker.hpp), as oomlab's does.
std::optional<std::size_t> measure_context_bytes(int device, std::size_t free_with_ours, std::string& error);

}  // namespace oomlab::doctor::detail
