// CUDA architectures: the ones this binary was built for (CMAKE_CUDA_ARCHITECTURES, baked in at
// configure time), which of its images the driver runs on a given GPU, and the start-up check
// that says in one line when none fits ("built for ..., this GPU is 7.5, rebuild with ...").
// The parsing and the choice are pure functions (tested without a GPU); current_cuda_code() asks
// the driver which image it loaded.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlab {

struct ComputeCapability {
  int major = 0, minor = 0;
  int number() const { return major * 10 + minor; }  // 75, 90, 120: as CMake and nvcc spell it
  std::string text() const;                          // "7.5"
};
inline bool operator==(ComputeCapability a, ComputeCapability b) {
  return a.major == b.major && a.minor == b.minor;
}
inline bool operator!=(ComputeCapability a, ComputeCapability b) { return !(a == b); }

// One entry of a CMake CUDA_ARCHITECTURES list: "80" (SASS and PTX), "86-real" (SASS only),
// "120-virtual" (PTX only), "90a-real" (arch-specific: sm_90a's wgmma, runs on exactly 9.0).
struct CudaArch {
  ComputeCapability cc;
  bool arch_specific = false;  // the "a" suffix
  bool sass = false;           // machine code: runs on cc.major GPUs of minor >= cc.minor ("a": == cc)
  bool ptx = false;            // PTX: the driver JIT-compiles it for cc and every newer GPU ("a": == cc)
  std::string suffix() const;  // "90a", "80"
};

// "75-real;80;90a-real;120" (';', ',' or blanks between entries). Throws std::invalid_argument
// naming the entry on anything else, "native", "all" and "all-major" included (CMake expands them
// before they reach the binary).
std::vector<CudaArch> parse_cuda_architectures(std::string_view list);

// "sm_75 sm_80 sm_90a sm_120 + PTX compute_80 compute_120"; "no GPU code" when empty.
std::string describe_cuda_architectures(const std::vector<CudaArch>& built);

// The code the driver runs on a GPU: compiled for `code` (the PTX/SASS architecture, <= the
// device's), with sm_90a's features or not, from SASS or JIT-compiled from PTX.
struct CudaImage {
  ComputeCapability code;
  bool arch_specific = false;
  bool jit = false;
};

// "sm_90a", "sm_86", "compute_80 PTX (JIT)".
std::string describe_cuda_image(const CudaImage& image);

// How the driver may use PTX: JIT-compile it where no SASS fits (the default), never
// (CUDA_DISABLE_PTX_JIT=1), or always, ignoring the SASS (CUDA_FORCE_PTX_JIT=1).
enum class PtxJit { allowed, disabled, forced };
PtxJit ptx_jit_from_environment();

// Which image of `built` the driver picks on `device`: the newest SASS of the device's major
// version and a minor no higher than its own (an "a" image only on exactly its capability); else
// the newest PTX of a capability no higher than the device's. nullopt: no image fits (the binary
// cannot run a kernel there).
std::optional<CudaImage> select_cuda_image(const std::vector<CudaArch>& built, ComputeCapability device,
                                           PtxJit jit = PtxJit::allowed);

// This binary's architectures, as configured (empty in a CPU-only build), and CMake's spelling
// of them ("75-real;80;86-real;89-real;90a-real;100-real;120").
const std::vector<CudaArch>& built_cuda_architectures();
const char* built_cuda_architectures_text();

// The one line for a binary that cannot run on `device`: what it was built for, the device's
// capability, how to rebuild; `why` (the driver's error, JIT disabled; may be empty) goes in
// parentheses.
std::string no_cuda_code_message(std::string_view device_name, ComputeCapability device,
                                 const std::vector<CudaArch>& built, std::string_view why);

// What this process runs on the current GPU: the device and the image the driver loaded for it
// (asked once per process). Throws std::runtime_error with no_cuda_code_message's line when the
// binary has no code the device can run (or, in a CPU-only build, saying so).
struct CurrentCudaCode {
  std::string device_name;  // "NVIDIA H200"
  ComputeCapability device;
  CudaImage image;
  std::size_t max_shared_bytes_per_block = 0;  // what one block may opt in to
};
const CurrentCudaCode& current_cuda_code();

// The driver's answer, from current_cuda_code(): empty when this binary can run kernels on the
// current GPU, when there is no usable GPU (cuda_available() says why elsewhere) and in a
// CPU-only build; else the one line. Creates the CUDA context (`oomlab doctor`, tests). Never
// throws.
std::string cuda_code_problem();

// The start-up check for a command about to run on cuda, in the process that starts the runs:
// the same line, decided from the device's capability and this binary's list by the driver's
// rules (select_cuda_image, honouring CUDA_DISABLE_PTX_JIT / CUDA_FORCE_PTX_JIT) without creating
// a CUDA context (one would hold ~500 MiB of the GPU that every child's measurement sees). What
// the rules cannot know (PTX newer than the driver) the children's current_cuda_code() reports.
// Empty when fine, without a GPU and in a CPU-only build. Never throws.
std::string startup_cuda_code_problem();

}  // namespace oomlab
