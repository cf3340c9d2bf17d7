// The doctor's checks, in the order a user reasons about an OOM: is there a GPU and can this
// binary use it, how much memory is there and who else holds some, then the settings. Each is
// a pure function of MachineFacts; run_checks returns them all, one line each.
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

#include "harness/doctor/check.hpp"
#include "harness/doctor/machine_facts.hpp"
#include "harness/memory/budget.hpp"

namespace oomlab::doctor {

std::vector<Check> run_checks(const MachineFacts& facts);

// version_checks.cpp
Check check_gpu(const MachineFacts& facts);
// "no GPU: nothing to check on the device" and its kin when no GPU could be used; empty when one
// was. The verdict line says it (summarize), so the skipped device checks read as what they are.
std::string device_unchecked_reason(const MachineFacts& facts);
Check check_driver(const MachineFacts& facts);   // driver's CUDA vs the runtime's
Check check_runtime(const MachineFacts& facts);  // runtime vs the toolkit it was built with
Check check_architecture(const MachineFacts& facts);  // this build's GPU code vs the GPU

// memory_checks.cpp
Check check_memory(const MachineFacts& facts);
Check check_context(const MachineFacts& facts);

// process_checks.cpp
Check check_processes(const MachineFacts& facts);

// nvml_checks.cpp
Check check_mig(const MachineFacts& facts);
Check check_ecc(const MachineFacts& facts);
Check check_persistence(const MachineFacts& facts);

// env_checks.cpp
Check check_oomlab_alloc_conf(const MachineFacts& facts);
Check check_pytorch_alloc_conf(const MachineFacts& facts);

// Others holding at least this share of the card fail the processes check: a run then has
// noticeably less than the card (a 16 GiB card with a stale 3 GiB process is the classic case).
constexpr double kHeldShareThatFails = 0.10;

// total - free - one context: what other processes hold as cudaMemGetInfo sees it; nullopt
// when the context was not measured.
std::optional<std::size_t> held_by_others(const GpuFacts& gpu);

// The oomlab profile for this card: same name as the profile's description and the card_bytes
// closest to `total_bytes` (within 10%); null when oomlab has none.
const memory::GpuProfile* profile_for_device(const GpuFacts& gpu);

}  // namespace oomlab::doctor
