// gather_machine_facts: the order of the reads matters (see gather.hpp).
#include "harness/doctor/gather.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "harness/doctor/cuda_facts.hpp"
#include "harness/doctor/device_files.hpp"
#include "harness/doctor/nvml_facts.hpp"
#include "harness/device/cuda_archs.hpp"

namespace oomlab::doctor {
namespace {

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// "580.159" out of whatever text names it: the first token of digits and dots with a dot in it.
std::string release_token(const std::string& text) {
  std::istringstream words(text.substr(0, 4096));
  std::string word;
  while (words >> word) {
    if (word.size() <= 20 && word.find('.') != std::string::npos &&
        word.find_first_not_of("0123456789.") == std::string::npos && word.front() != '.') {
      return word;
    }
  }
  return "";
}

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159  ..."; empty without a driver.
std::string proc_driver_release() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  std::getline(in, line);
  return release_token(line);
}

// NVML's pids are the host's: inside a container the same number can be an unrelated process
// here. A name is kept only when that pid has a device file open, or when the scan could not
// look at every process.
void drop_names_not_confirmed(NvmlFacts& nvml, const DeviceFileScan& scan) {
  if (scan.unreadable > 0 || !scan.proc_readable) return;
  for (GpuProcess& process : nvml.processes) {
    bool holds = std::any_of(scan.holders.begin(), scan.holders.end(),
                             [&](const GpuProcess& holder) { return holder.pid == process.pid; });
    if (!holds) process.name.clear();
  }
}

// Loads this binary's device code, so it comes after the context and the process lists.
void read_loaded_code(GpuFacts& gpu) {
  gpu.code_problem = cuda_code_problem();
  if (!gpu.code_problem.empty()) return;
  try {
    gpu.loaded_image = describe_cuda_image(current_cuda_code().image);
  } catch (const std::exception&) {
    // cuda_code_problem() asked the same question and was content: nothing more to say.
  }
}

}  // namespace

MachineFacts gather_machine_facts() {
  MachineFacts facts;
  facts.build.with_cuda = OOMLAB_WITH_CUDA;
  facts.build.cuda_architectures = built_cuda_architectures_text();
  facts.env.oomlab_alloc_conf = environment("OOMLAB_ALLOC_CONF");
  facts.env.pytorch_alloc_conf = environment("PYTORCH_CUDA_ALLOC_CONF");
  facts.env.cuda_visible_devices = environment("CUDA_VISIBLE_DEVICES");

  const int self = static_cast<int>(::getpid());
  detail::read_cuda_versions(facts.versions);
  facts.gpu = detail::read_gpu_identity();
  facts.device_files = scan_device_files(kNvidiaDevicePrefix, self);
  if (facts.gpu.available) {
    const NvmlLibrary nvml(nvml_library_path());
    facts.nvml = detail::read_nvml_facts(nvml, facts.gpu.pci_bus_id, self, facts.versions.driver_release);
    drop_names_not_confirmed(facts.nvml, facts.device_files);
  } else {
    facts.nvml.error = "no GPU";
  }
  facts.versions.driver_release = release_token(facts.versions.driver_release);
  if (facts.versions.driver_release.empty()) facts.versions.driver_release = proc_driver_release();
  if (facts.gpu.available) detail::read_gpu_memory(facts.gpu);
  if (facts.gpu.available) read_loaded_code(facts.gpu);
  return facts;
}

}  // namespace oomlab::doctor
