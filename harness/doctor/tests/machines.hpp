// Facts of the machines the tests talk about, as gather_machine_facts would read them.
#pragma once
#include "harness/doctor/machine_facts.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::doctor::testing {

// What a machine's card is: its name and compute capability, its memory (MiB) with only this
// process's context on it, and NVML's MIG, ECC and persistence modes.
struct Card {
  const char* name;
  int compute_major, compute_minor;
  std::size_t total_mib, context_mib;
  ModeFact mig, ecc, persistence;
};
inline void set_card(MachineFacts& facts, const Card& card) {
  GpuFacts& gpu = facts.gpu;
  gpu.name = card.name;
  gpu.compute_major = card.compute_major;
  gpu.compute_minor = card.compute_minor;
  gpu.total_bytes = card.total_mib * MiB;
  gpu.context_bytes = card.context_mib * MiB;
  gpu.free_bytes = (card.total_mib - card.context_mib) * MiB;
  facts.nvml.mig = card.mig;
  facts.nvml.ecc = card.ecc;
  facts.nvml.persistence = card.persistence;
}

// The GPU machine: H200, driver 580.159 (CUDA 13.0) with its NVML, built for 90a, nobody else on it.
inline MachineFacts h200_machine() {
  MachineFacts facts;
  facts.build = {true, "90a"};
  facts.versions = {13000, 13000, 13000, "580.159"};
  facts.gpu.available = true;
  facts.gpu.device_count = 1;
  facts.gpu.pci_bus_id = "00000000:19:00.0";
  set_card(facts, {"NVIDIA H200", 9, 0, 143771, 529, {Mode::off, Mode::off}, {Mode::on, Mode::on},
                   {Mode::on, Mode::unknown}});
  facts.nvml.processes_known = true;
  facts.device_files = {"/dev/nvidia", 4, true, {}, 0};
  return facts;
}

// A desktop RTX 4060 Ti 16 GB with a fat build and NVML.
inline MachineFacts rtx4060ti_machine() {
  MachineFacts facts = h200_machine();
  facts.build.cuda_architectures = "75-real;80;86-real;89-real;90a-real;100-real;120";
  const ModeFact unsupported{Mode::not_supported, Mode::not_supported};
  set_card(facts,
           {"NVIDIA GeForce RTX 4060 Ti", 8, 9, 16380, 450, unsupported, unsupported, {Mode::off, Mode::unknown}});
  return facts;
}

// This development machine: the CUDA toolkit, no driver, no GPU (so NVML is not asked).
inline MachineFacts no_gpu_machine() {
  MachineFacts facts;
  facts.build = {true, "90a"};
  facts.versions = {0, 13000, 13000, ""};
  facts.gpu.unavailable_reason =
      "cudaGetDeviceCount: cudaErrorInsufficientDriver (CUDA driver version is insufficient for CUDA runtime version)";
  facts.nvml.error = "no GPU";
  facts.device_files = {"/dev/nvidia", 0, true, {}, 0};
  return facts;
}

// A process another program left on the GPU.
inline GpuProcess process(int pid, const char* name, std::optional<std::size_t> bytes, char state = 'S') {
  GpuProcess p;
  p.pid = pid;
  p.name = name;
  p.user = "alice";
  p.state = state;
  p.bytes = bytes;
  return p;
}

}  // namespace oomlab::doctor::testing
