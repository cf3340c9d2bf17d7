// Reading the machine into MachineFacts, for `oomlab doctor`.
#pragma once
#include "harness/doctor/machine_facts.hpp"

namespace oomlab::doctor {

// Build, versions, GPU, NVML, the /proc scan and the environment. NVML's process list and the
// scan are read before this process creates its CUDA context, so neither counts it. Measuring
// the context spawns this program as a worker: main() must dispatch workers first
// (harness/process/worker.hpp), as oomlab's main does. Never throws for a machine problem.
MachineFacts gather_machine_facts();

}  // namespace oomlab::doctor
