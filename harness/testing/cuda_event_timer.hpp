// The one benchmark timer: CUDA events around one iteration on a stream; the destructor reports
// the elapsed time as the iteration's manual time (use with ->UseManualTime()), or marks the
// iteration as failed when the events do. Only for code compiled with CUDA.
#pragma once
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "harness/device/cuda_check.hpp"

namespace oomlab::testing {

class CudaEventTimer {
 public:
  CudaEventTimer(benchmark::State& state, cudaStream_t stream) : state_(state), stream_(stream) {
    OOMLAB_CUDA_CHECK(cudaEventCreate(&start_));
    OOMLAB_CUDA_CHECK(cudaEventCreate(&stop_));
    OOMLAB_CUDA_CHECK(cudaEventRecord(start_, stream_));
  }
  ~CudaEventTimer() {
    float milliseconds = 0;
    if (cudaEventRecord(stop_, stream_) == cudaSuccess && cudaEventSynchronize(stop_) == cudaSuccess &&
        cudaEventElapsedTime(&milliseconds, start_, stop_) == cudaSuccess) {
      state_.SetIterationTime(milliseconds / 1e3);
    } else {
      state_.SkipWithError("CUDA event timing failed");
    }
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;

 private:
  benchmark::State& state_;
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace oomlab::testing
