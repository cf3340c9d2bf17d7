// The block-wide cp.async ring that feeds wgmma from shared memory (conv's implicit GEMM and
// shifted-window backward-weight): step t's copies are issued `Ahead` steps before its products.
// Before step(t) runs, every thread's copies of step t are complete and visible to the tensor
// cores, and the whole block has passed a barrier after finishing step t - 1's body; only then
// are step t + Ahead's copies issued, into the stage that step t + Ahead - Stages read. So with
// one step of wgmma left in flight by each body (wgmma_wait<1>), Stages = Ahead + 2 is enough.
#pragma once
#include "kernels/core/mma_sm80.cuh"
#include "kernels/core/wgmma_sm90.cuh"

namespace oomlab::ops::detail {

template <int Ahead, class Load, class Step>
__device__ __forceinline__ void run_copy_ring(int steps, Load&& load, Step&& step) {
#pragma unroll
  for (int s = 0; s < Ahead; ++s) {
    if (s < steps) load(s);
    cp_async_commit();
  }
  for (int t = 0; t < steps; ++t) {
    cp_async_wait<Ahead - 1>();
    fence_shared_for_wgmma();  // this thread's copies of step t, visible to the tensor cores
    __syncthreads();           // everyone's; and step t - 2's wgmma (which read the stage refilled next) is done
    if (t + Ahead < steps) load(t + Ahead);
    cp_async_commit();
    step(t);
  }
}

}  // namespace oomlab::ops::detail
