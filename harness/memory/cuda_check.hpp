// The one error-macro family for CUDA calls. Throws oomlab::CudaError naming the call, the
// error and file:line; never exits. Only include from code compiled with CUDA.
#pragma once
#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

namespace oomlab {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* call, const char* file,
                                          int line) {
  throw CudaError(code, std::string(call) + " failed: " + cudaGetErrorName(code) + " (" +
                            cudaGetErrorString(code) + ") at " + file + ":" + std::to_string(line));
}

}  // namespace oomlab

#define OOMLAB_CUDA_CHECK(call)                                                  \
  do {                                                                           \
    cudaError_t oomlab_status_ = (call);                                         \
    if (oomlab_status_ != cudaSuccess) {                                         \
      (void)cudaGetLastError(); /* clear a sticky-free error before throwing */  \
      ::oomlab::throw_cuda_error(oomlab_status_, #call, __FILE__, __LINE__);     \
    }                                                                            \
  } while (0)

// After every kernel launch: catches bad launch configurations at the launch site.
#define OOMLAB_CUDA_CHECK_LAUNCH() OOMLAB_CUDA_CHECK(cudaGetLastError())
