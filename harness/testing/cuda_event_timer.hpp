// The benchmark timers: CudaEventTimer puts CUDA events around one iteration on a stream and
// reports the elapsed time as the iteration's manual time (use with ->UseManualTime()), or marks
// the iteration as failed when the events do; mean_milliseconds times a batch of back-to-back
// runs (for a reference measured in the same run). Only for code compiled with CUDA.
#pragma once
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>

#include "harness/memory/cuda_check.hpp"

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

// Mean milliseconds of one run of `work` (enqueued on `stream`) over `runs` back-to-back runs,
// after `warmups` untimed ones.
inline double mean_milliseconds(const std::function<void()>& work, cudaStream_t stream, int runs = 20,
                                int warmups = 1) {
  for (int i = 0; i < warmups; ++i) work();
  cudaEvent_t start = nullptr, stop = nullptr;
  OOMLAB_CUDA_CHECK(cudaEventCreate(&start));
  OOMLAB_CUDA_CHECK(cudaEventCreate(&stop));
  OOMLAB_CUDA_CHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < runs; ++i) work();
  OOMLAB_CUDA_CHECK(cudaEventRecord(stop, stream));
  OOMLAB_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  OOMLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / runs;
}

// Best mean milliseconds of `ours` and of `reference` over alternating rounds (reference first):
// neither side gets the colder GPU or the lower clocks, so their ratio is the benchmarks' counter.
struct AlternatingTimes {
  double ours_ms;
  double reference_ms;
};
inline AlternatingTimes alternating_best_milliseconds(const std::function<void()>& ours,
                                                      const std::function<void()>& reference,
                                                      cudaStream_t stream, int rounds = 3) {
  AlternatingTimes best{1e30, 1e30};
  for (int round = 0; round < rounds; ++round) {
    best.reference_ms = std::min(best.reference_ms, mean_milliseconds(reference, stream));
    best.ours_ms = std::min(best.ours_ms, mean_milliseconds(ours, stream));
  }
  return best;
}

}  // namespace oomlab::testing
