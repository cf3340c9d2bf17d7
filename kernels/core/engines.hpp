// Which engine each kernel family runs on this GPU: decided here and nowhere else, from the
// device and the image of this binary the driver loaded (harness/device/cuda_archs.hpp).
//   wgmma     Hopper's warpgroup tensor cores, bulk asynchronous copies, thread-block clusters:
//             a compute 9.0 GPU running the binary's sm_90a image (H100, H200, GH200)
//   mma.sync  warp-level tensor cores on bf16/f16/tf32 and cp.async: code of compute 8.0 and up
//             (A100, A10, RTX 30xx/40xx/50xx, L4, L40S, B200; Hopper without an sm_90a image)
//   none      older code: compute 7.5 (T4, RTX 20xx) has no bf16 tensor cores and no cp.async,
//             and neither has a compute_75 image JIT-compiled on a newer GPU. The kernels that
//             need them (fused attention, conv's implicit GEMM) then end with one line naming
//             what they need (require_tensor_cores); everything else runs.
// The choice is a pure function (choose_engine), tested without a GPU.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/device/cuda_archs.hpp"

namespace oomlab::ops {

enum class TensorCoreEngine { wgmma, mma_sync, none };
const char* engine_name(TensorCoreEngine engine);  // "wgmma", "mma.sync", "none"

// wgmma only on a compute 9.0 device running an sm_90a image, and only while allowed; mma.sync
// where the image's code is compute 8.0 or newer; none below.
TensorCoreEngine choose_engine(ComputeCapability device, const CudaImage& image, bool allow_wgmma);
// The same from a binary's architecture list (the image select_cuda_image predicts); none when
// no image fits.
TensorCoreEngine choose_engine(ComputeCapability device, const std::vector<CudaArch>& built, bool allow_wgmma);

// The engine on the current GPU (asked of the driver once per process), honouring allow_wgmma
// (kernels/core/wgmma_device.hpp). Throws where current_cuda_code() does.
TensorCoreEngine current_engine();

// The dynamic shared memory one block may use on the current GPU: 227 KiB on 9.0 and 10.0,
// 163 KiB on 8.0, 99 KiB on 8.6, 8.9 and 12.x, 64 KiB on 7.5. Kernels pick tile shapes that fit
// it. limit_shared_bytes(bytes) lowers it for the process, so the GPU tests can run a smaller
// card's choices on a large one (0 restores the device's own limit).
std::size_t max_shared_bytes_per_block();
void limit_shared_bytes(std::size_t bytes);

// A kernel that cannot run on this GPU or with this binary's code for it.
class UnsupportedDevice : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The line for `op` needing the mma.sync engine where the engine is none: "fused attention
// (forward) needs compute capability 8.0 or newer (bf16 tensor cores, cp.async); Tesla T4 is
// 7.5", or, for older code on a newer GPU, what the binary runs and how to rebuild.
std::string tensor_core_requirement(std::string_view op, const CurrentCudaCode& code);

// Throws UnsupportedDevice with tensor_core_requirement's line when the current engine is none.
// Called where the mma.sync / wgmma kernels are launched.
void require_tensor_cores(std::string_view op);

// Throws UnsupportedDevice when a block of `op` needs more shared memory than
// max_shared_bytes_per_block(): "... needs 108 KiB of shared memory per block; NVIDIA GeForce RTX
// 4090 (8.9) allows 99 KiB". The kernels choose shapes that fit; this is the line if one does not.
void require_shared_bytes(std::string_view op, std::size_t bytes);

// What each kernel family runs on, for the run record's device block: attention_forward,
// attention_backward, conv ("wgmma", "mma.sync" or "none (needs compute 8.0)"), matmul and
// attention_naive ("cublasLt", "cublas").
struct KernelEngine {
  std::string family;
  std::string engine;
};
std::vector<KernelEngine> kernel_engines(ComputeCapability device, const CudaImage& image, bool allow_wgmma);
// The same for the current GPU. Throws where current_cuda_code() does.
std::vector<KernelEngine> current_kernel_engines();

}  // namespace oomlab::ops
