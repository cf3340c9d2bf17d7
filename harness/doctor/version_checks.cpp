// Is there a GPU, and can this binary use it: driver, runtime, toolkit, architectures.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/device/cuda_archs.hpp"
#include "harness/doctor/checks.hpp"
#include "harness/memory/user_text.hpp"

namespace oomlab::doctor {
namespace {

int major_of(int version) { return version / 1000; }

// 13000 -> "13.0", 12040 -> "12.4".
std::string cuda_version(int version) {
  return std::to_string(major_of(version)) + "." + std::to_string(version % 1000 / 10);
}

// The oldest Linux driver each CUDA major version runs on (NVIDIA's CUDA compatibility table);
// empty for a major this table does not know.
std::string minimum_driver(int cuda_major) {
  switch (cuda_major) {
    case 11: return "450.80.02";
    case 12: return "525.60.13";
    case 13: return "580.65.06";
  }
  return "";
}

// "580.159 (CUDA 13.0)", or "CUDA 13.0" when the release is unknown.
std::string driver_label(const VersionFacts& versions) {
  std::string cuda = "CUDA " + cuda_version(versions.driver_cuda);
  if (versions.driver_release.empty()) return "driver for " + cuda;
  return versions.driver_release + " (" + cuda + ")";
}

std::string visible_devices_note(const EnvFacts& env) {
  if (!env.cuda_visible_devices) return "";
  return "; CUDA_VISIBLE_DEVICES=" + quote_user_text(*env.cuda_visible_devices, 40);
}

constexpr const char* kBuiltWithoutCuda = "oomlab was built without CUDA (configure with -DOOMLAB_CUDA=ON)";

}  // namespace

Check check_gpu(const MachineFacts& facts) {
  const GpuFacts& gpu = facts.gpu;
  if (gpu.available) {
    return {"gpu", Verdict::ok,
            gpu.name + ", compute " + std::to_string(gpu.compute_major) + "." +
                std::to_string(gpu.compute_minor) + ", device " + std::to_string(gpu.device) +
                " of " + std::to_string(gpu.device_count) + visible_devices_note(facts.env)};
  }
  if (!facts.build.with_cuda) return {"gpu", Verdict::skip, std::string("none: ") + kBuiltWithoutCuda};
  // No driver and no device files: a machine without an NVIDIA GPU, which is fine.
  if (facts.versions.driver_cuda == 0 && facts.device_files.device_files == 0) {
    return {"gpu", Verdict::skip,
            "none: no NVIDIA driver or device on this machine (" + gpu.unavailable_reason + ")" +
                visible_devices_note(facts.env)};
  }
  return {"gpu", Verdict::fail,
          "no usable GPU although an NVIDIA driver or device is present: " + gpu.unavailable_reason +
              visible_devices_note(facts.env) + "; see driver and processes"};
}

std::string device_unchecked_reason(const MachineFacts& facts) {
  if (facts.gpu.available) return "";
  if (!facts.build.with_cuda) return "no GPU (oomlab was built without CUDA): nothing to check on the device";
  if (facts.versions.driver_cuda == 0 && facts.device_files.device_files == 0) {
    return "no GPU: nothing to check on the device";
  }
  return "no usable GPU: nothing on the device could be checked";
}

Check check_driver(const MachineFacts& facts) {
  const VersionFacts& v = facts.versions;
  if (!facts.build.with_cuda) return {"driver", Verdict::skip, std::string("not used: ") + kBuiltWithoutCuda};
  if (v.driver_cuda == 0) {
    return {"driver", Verdict::skip, "none: no NVIDIA driver found (libcuda.so.1 cannot be loaded)"};
  }
  const std::string driver = driver_label(v), runtime = cuda_version(v.runtime);
  if (major_of(v.driver_cuda) < major_of(v.runtime)) {
    std::string minimum = minimum_driver(major_of(v.runtime));
    return {"driver", Verdict::fail,
            driver + " is older than runtime " + runtime + ": CUDA calls fail with "
            "cudaErrorInsufficientDriver; install a driver for CUDA " + runtime +
                (minimum.empty() ? "" : " (" + minimum + " or newer)") + " or build with a CUDA " +
                std::to_string(major_of(v.driver_cuda)) + " toolkit"};
  }
  if (v.driver_cuda < v.runtime) {
    // Minor-version compatibility: same major runs, with limits.
    return {"driver", Verdict::warn,
            driver + " < runtime " + runtime + ": runs by minor-version compatibility, but PTX "
            "JIT and newer APIs fail; update the driver to one for CUDA " + runtime};
  }
  return {"driver", Verdict::ok, driver + " >= runtime " + runtime};
}

Check check_runtime(const MachineFacts& facts) {
  const VersionFacts& v = facts.versions;
  if (!facts.build.with_cuda) return {"runtime", Verdict::skip, std::string("none: ") + kBuiltWithoutCuda};
  const std::string toolkit = cuda_version(v.toolkit);
  if (v.runtime == 0)
    return {"runtime", Verdict::skip, "unknown (cudaRuntimeGetVersion failed); built with " + toolkit};
  if (v.runtime != v.toolkit) {
    return {"runtime", Verdict::warn,
            cuda_version(v.runtime) + " loaded, but this binary was built with toolkit " + toolkit +
                ": another libcudart is found first (LD_LIBRARY_PATH?)"};
  }
  return {"runtime", Verdict::ok, cuda_version(v.runtime) + ", the toolkit this binary was built with"};
}

Check check_architecture(const MachineFacts& facts) {
  if (!facts.build.with_cuda) return {"arch", Verdict::skip, std::string("none: ") + kBuiltWithoutCuda};
  std::vector<CudaArch> built;
  try {
    built = parse_cuda_architectures(facts.build.cuda_architectures);
  } catch (const std::invalid_argument& e) {
    return {"arch", Verdict::warn, std::string("cannot read this build's architecture list: ") + e.what()};
  }
  const std::string built_for = "built for " + describe_cuda_architectures(built);
  const GpuFacts& gpu = facts.gpu;
  if (!gpu.available) return {"arch", Verdict::skip, built_for + "; no GPU to compare with"};
  if (!gpu.code_problem.empty()) return {"arch", Verdict::fail, gpu.code_problem};  // the driver's answer
  const ComputeCapability device{gpu.compute_major, gpu.compute_minor};
  const std::optional<CudaImage> image = select_cuda_image(built, device);
  if (!image) return {"arch", Verdict::fail, no_cuda_code_message(gpu.name, device, built, "")};
  const std::string runs = "compute " + device.text() +
                           (gpu.loaded_image.empty() ? " runs " + describe_cuda_image(*image)
                                                     : ": the driver loaded " + gpu.loaded_image);
  if (image->jit) {
    return {"arch", Verdict::warn,
            runs + ": compiled at start-up, without this GPU's own engines; " + built_for +
                "; rebuild with -DCMAKE_CUDA_ARCHITECTURES=native or the default list for machine code"};
  }
  return {"arch", Verdict::ok, runs + "; " + built_for};
}

}  // namespace oomlab::doctor
