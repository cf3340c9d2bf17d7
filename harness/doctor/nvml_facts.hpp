// Internal: what NVML says about the device: MIG, ECC, persistence, the driver release and the
// processes that hold memory, read through a loaded NvmlLibrary. Never throws.
#pragma once
#include <string>

#include "harness/doctor/machine_facts.hpp"
#include "harness/doctor/nvml_library.hpp"

namespace oomlab::doctor::detail {

// `pci_bus_id` picks NVML's device (its numbering ignores CUDA_VISIBLE_DEVICES); `self_pid` is
// left out of the process list. Sets `driver_release` when NVML names it. A library that did not
// load gives NvmlFacts::error = its error().
NvmlFacts read_nvml_facts(const NvmlLibrary& nvml, const std::string& pci_bus_id, int self_pid,
                          std::string& driver_release);

}  // namespace oomlab::doctor::detail
