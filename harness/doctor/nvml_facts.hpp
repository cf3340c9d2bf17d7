// Internal: what NVML says about the device: MIG, ECC, persistence, the driver release and the
// processes that hold memory. nvml_facts.cpp (NVML builds) or no_nvml_facts.cpp. Never throws.
#pragma once
#include <string>

#include "harness/doctor/machine_facts.hpp"

namespace oomlab::doctor::detail {

// `pci_bus_id` picks NVML's device (its numbering ignores CUDA_VISIBLE_DEVICES); `self_pid` is
// left out of the process list. Sets `driver_release` when NVML names it.
NvmlFacts read_nvml_facts(const std::string& pci_bus_id, int self_pid, std::string& driver_release);

}  // namespace oomlab::doctor::detail
