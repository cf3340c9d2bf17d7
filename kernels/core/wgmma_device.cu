#include "kernels/core/wgmma_device.hpp"

#include <cuda_runtime_api.h>

#include <atomic>

#include "harness/device/cuda_check.hpp"

namespace oomlab::ops::detail {

namespace {
std::atomic<bool> wgmma_allowed{true};
}  // namespace

void allow_wgmma(bool allowed) { wgmma_allowed = allowed; }

bool device_runs_wgmma() {
  if (!OOMLAB_CUDA_SM90A || !wgmma_allowed) return false;
  static const bool hopper = [] {
    int device = 0, major = 0, minor = 0;
    OOMLAB_CUDA_CHECK(cudaGetDevice(&device));
    OOMLAB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    OOMLAB_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    return major == 9 && minor == 0;
  }();
  return hopper;
}

}  // namespace oomlab::ops::detail
