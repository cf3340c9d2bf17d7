// cuda_probe_code(): whether the driver can load this binary's device code on the current GPU.
// A .cu file of oomlab_device, so compiled for every architecture the kernels are
// (CMAKE_CUDA_ARCHITECTURES): the driver's answer for this kernel is its answer for all of them.
#include <cuda_runtime_api.h>

#include "harness/device/cuda_backend.hpp"

namespace oomlab::detail {

namespace {
__global__ void code_probe_kernel() {}
}  // namespace

CudaCodeProbe cuda_probe_code() {
  CudaCodeProbe probe;
  cudaFuncAttributes attributes{};
  const cudaError_t status = cudaFuncGetAttributes(&attributes, code_probe_kernel);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it for the caller's next call
    probe.error = cudaGetErrorName(status);
    return probe;
  }
  probe.loaded = true;
  probe.ptx_version = attributes.ptxVersion;
  probe.binary_version = attributes.binaryVersion;
  return probe;
}

}  // namespace oomlab::detail
