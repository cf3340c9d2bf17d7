// What `oomlab doctor` reads off the machine, as plain data. The checks (checks.hpp) are pure
// functions of these facts, so every verdict is testable without a GPU; gather.hpp fills them.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace oomlab::doctor {

// CUDA versions as the API reports them: 13000 is 13.0, 12040 is 12.4.
struct VersionFacts {
  int driver_cuda = 0;         // cudaDriverGetVersion: the newest CUDA the driver supports; 0: no driver
  int runtime = 0;             // cudaRuntimeGetVersion; 0 in a CPU-only build
  int toolkit = 0;             // CUDART_VERSION this binary was compiled with; 0 in a CPU-only build
  std::string driver_release;  // "580.159" (NVML or /proc/driver/nvidia/version), digits and dots only
};

struct BuildFacts {
  bool with_cuda = false;
  std::string cuda_architectures;  // as built_cuda_architectures_text(): "90a-real", "80;86-real;90a"
};

struct GpuFacts {
  bool available = false;
  std::string unavailable_reason;  // cuda_unavailable_reason() when not available
  int device = 0;                  // the CUDA device checked (a run's device)
  int device_count = 0;
  std::string name;                // "NVIDIA H200", as the driver names it (at most 255 chars)
  int compute_major = 0, compute_minor = 0;
  std::string pci_bus_id;          // matches the device to NVML's numbering
  std::size_t total_bytes = 0;     // cudaMemGetInfo, with this process's context alive
  std::size_t free_bytes = 0;
  std::optional<std::size_t> context_bytes;  // one process's context, measured (context_probe)
  std::string context_error;                 // why context_bytes is unknown
  // The driver's own answer on this binary's code (harness/device/cuda_archs.hpp): the image it
  // loaded ("sm_90a"), or the one line saying it has none for this GPU. Both empty: not asked.
  std::string loaded_image;
  std::string code_problem;
};

// A process other than this one that holds the GPU (NVML) or has a device file open (/proc).
struct GpuProcess {
  int pid = 0;
  std::string name;                 // /proc/PID/comm; empty when the pid is not visible here
  std::string user;                 // owner's login name (or uid); empty when unknown
  char state = '?';                 // /proc/PID/stat state: R, S, D, T (stopped), Z (zombie)
  std::optional<std::size_t> bytes; // GPU memory it holds (NVML); unknown from /proc alone
  bool graphics_only = false;       // NVML lists it only as a graphics client (a display server)
};

// MIG, ECC and persistence modes as NVML reports them.
enum class Mode { unknown, not_supported, off, on };
struct ModeFact {
  Mode current = Mode::unknown;
  Mode pending = Mode::unknown;  // after the next reset/reboot (MIG, ECC); unknown: not reported
};

struct NvmlFacts {
  std::string error;  // why NVML did not answer, one line ("NVML not found: ..."); empty when it did
  ModeFact mig, ecc, persistence;
  bool processes_known = false;     // true: `processes` is NVML's complete list for the device
  std::vector<GpuProcess> processes;  // other processes only, compute and graphics merged
};

// The `fuser -v /dev/nvidia*` of the checklist: processes with a file under a prefix open.
struct DeviceFileScan {
  std::string prefix;               // "/dev/nvidia"
  std::size_t device_files = 0;     // files that exist under the prefix (0: no NVIDIA devices)
  bool proc_readable = false;       // /proc could be listed at all
  std::vector<GpuProcess> holders;  // other processes with such a file open
  std::size_t unreadable = 0;       // processes whose open files could not be read (other users)
};

struct EnvFacts {
  std::optional<std::string> oomlab_alloc_conf;    // OOMLAB_ALLOC_CONF
  std::optional<std::string> pytorch_alloc_conf;   // PYTORCH_CUDA_ALLOC_CONF
  std::optional<std::string> cuda_visible_devices; // CUDA_VISIBLE_DEVICES
};

struct MachineFacts {
  BuildFacts build;
  VersionFacts versions;
  GpuFacts gpu;
  NvmlFacts nvml;
  DeviceFileScan device_files;
  EnvFacts env;
};

}  // namespace oomlab::doctor
