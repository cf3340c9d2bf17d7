// Facts of the machines the tests talk about, as gather_machine_facts would read them.
#pragma once
#include "harness/doctor/machine_facts.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::doctor::testing {

// The GPU machine: H200, driver 580.159 (CUDA 13.0) with its NVML, built for 90a, nobody else on it.
inline MachineFacts h200_machine() {
  MachineFacts facts;
  facts.build = {true, "90a"};
  facts.versions = {13000, 13000, 13000, "580.159"};
  GpuFacts& gpu = facts.gpu;
  gpu.available = true;
  gpu.device_count = 1;
  gpu.name = "NVIDIA H200";
  gpu.compute_major = 9;
  gpu.compute_minor = 0;
  gpu.pci_bus_id = "00000000:19:00.0";
  gpu.total_bytes = 143771 * MiB;
  gpu.context_bytes = 529 * MiB;
  gpu.free_bytes = gpu.total_bytes - 529 * MiB;
  facts.nvml.mig = {Mode::off, Mode::off};
  facts.nvml.ecc = {Mode::on, Mode::on};
  facts.nvml.persistence = {Mode::on, Mode::unknown};
  facts.nvml.processes_known = true;
  facts.device_files = {"/dev/nvidia", 4, true, {}, 0};
  return facts;
}

// A desktop RTX 4060 Ti 16 GB with a fat build and NVML.
inline MachineFacts rtx4060ti_machine() {
  MachineFacts facts = h200_machine();
  facts.build.cuda_architectures = "75-real;80;86-real;89-real;90a-real;100-real;120";
  GpuFacts& gpu = facts.gpu;
  gpu.name = "NVIDIA GeForce RTX 4060 Ti";
  gpu.compute_major = 8;
  gpu.compute_minor = 9;
  gpu.total_bytes = 16380 * MiB;
  gpu.context_bytes = 450 * MiB;
  gpu.free_bytes = gpu.total_bytes - 450 * MiB;
  facts.nvml.mig = {Mode::not_supported, Mode::not_supported};
  facts.nvml.ecc = {Mode::not_supported, Mode::not_supported};
  facts.nvml.persistence = {Mode::off, Mode::unknown};
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
