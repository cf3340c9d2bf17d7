// The one place where kernels learn which engine runs (engines.hpp, wgmma_device.hpp).
#include "kernels/core/engines.hpp"

#include <atomic>
#include <map>

#include "harness/device/device.hpp"
#include "harness/device/engine_report.hpp"
#include "kernels/core/wgmma_device.hpp"

namespace oomlab::ops {

namespace {

std::atomic<bool> wgmma_allowed{true};
std::atomic<std::size_t> shared_bytes_limit{0};  // 0: the device's own

constexpr ComputeCapability kHopper{9, 0};
constexpr int kTensorCoreCode = 80;  // mma.sync on bf16/tf32 and cp.async: compute 8.0

}  // namespace

const char* engine_name(TensorCoreEngine engine) {
  switch (engine) {
    case TensorCoreEngine::wgmma: return "wgmma";
    case TensorCoreEngine::mma_sync: return "mma.sync";
    case TensorCoreEngine::none: return "none";
  }
  return "unknown";
}

TensorCoreEngine choose_engine(ComputeCapability device, const CudaImage& image, bool allow_wgmma) {
  if (allow_wgmma && device == kHopper && image.code == kHopper && image.arch_specific) {
    return TensorCoreEngine::wgmma;
  }
  return image.code.number() >= kTensorCoreCode ? TensorCoreEngine::mma_sync : TensorCoreEngine::none;
}

TensorCoreEngine choose_engine(ComputeCapability device, const std::vector<CudaArch>& built, bool allow_wgmma) {
  const std::optional<CudaImage> image = select_cuda_image(built, device, ptx_jit_from_environment());
  return image ? choose_engine(device, *image, allow_wgmma) : TensorCoreEngine::none;
}

TensorCoreEngine current_engine() {
  const CurrentCudaCode& code = current_cuda_code();
  return choose_engine(code.device, code.image, wgmma_allowed);
}

std::string tensor_core_requirement(std::string_view op, const CurrentCudaCode& code) {
  std::string line = std::string(op) + " needs compute capability 8.0 or newer (bf16 tensor cores, cp.async); ";
  if (code.device.number() < kTensorCoreCode) return line + code.device_name + " is " + code.device.text();
  // A newer GPU running older code: a compute_75 image JIT-compiled for it.
  return line + "this binary runs " + describe_cuda_image(code.image) + " code on " + code.device_name + " (" +
         code.device.text() + "): rebuild with -DCMAKE_CUDA_ARCHITECTURES=" +
         std::to_string(code.device.number()) + (code.device == kHopper ? "a" : "") + " or the default list";
}

std::size_t max_shared_bytes_per_block() {
  const std::size_t limit = shared_bytes_limit;
  // Without a GPU (shape-only tests, planning on dry) a set limit stands for the device's own.
  if (limit != 0 && !cuda_available()) return limit;
  const std::size_t device = current_cuda_code().max_shared_bytes_per_block;
  return limit != 0 && limit < device ? limit : device;
}

void limit_shared_bytes(std::size_t bytes) { shared_bytes_limit = bytes; }

void require_shared_bytes(std::string_view op, std::size_t bytes) {
  const std::size_t allowed = max_shared_bytes_per_block();
  if (bytes <= allowed) return;
  const CurrentCudaCode& code = current_cuda_code();
  throw UnsupportedDevice(std::string(op) + " needs " + std::to_string((bytes + 1023) / 1024) +
                          " KiB of shared memory per block; " + code.device_name + " (" + code.device.text() +
                          ") allows " + std::to_string(allowed / 1024) + " KiB");
}

void require_tensor_cores(std::string_view op) {
  if (current_engine() != TensorCoreEngine::none) return;
  throw UnsupportedDevice(tensor_core_requirement(op, current_cuda_code()));
}

std::vector<KernelEngine> kernel_engines(ComputeCapability device, const CudaImage& image, bool allow_wgmma) {
  const TensorCoreEngine engine = choose_engine(device, image, allow_wgmma);
  const std::string tensor_cores =
      engine == TensorCoreEngine::none ? "none (needs compute 8.0)" : engine_name(TensorCoreEngine::mma_sync);
  // The forward pass is mma.sync everywhere; the backward (head dim 64) and conv take wgmma.
  const std::string hopper = engine == TensorCoreEngine::wgmma ? engine_name(engine) : tensor_cores;
  return {{"attention_forward", tensor_cores},
          {"attention_backward", hopper},
          {"attention_naive", "cublas"},
          {"conv", hopper},
          {"matmul", "cublasLt"}};
}

std::vector<KernelEngine> current_kernel_engines() {
  const CurrentCudaCode& code = current_cuda_code();
  return kernel_engines(code.device, code.image, wgmma_allowed);
}

namespace {

std::map<std::string, std::string> report_current_engines() {
  std::map<std::string, std::string> engines;
  for (const KernelEngine& e : current_kernel_engines()) engines[e.family] = e.engine;
  return engines;
}

// The run records' device block asks through harness/device/engine_report.hpp.
const bool engines_reported = (register_engine_reporter(&report_current_engines), true);

}  // namespace

namespace detail {

void allow_wgmma(bool allowed) { wgmma_allowed = allowed; }

bool device_runs_wgmma() { return current_engine() == TensorCoreEngine::wgmma; }

}  // namespace detail

}  // namespace oomlab::ops
