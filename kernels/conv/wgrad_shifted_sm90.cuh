// conv2d backward-weight for 16-bit stride-1 convolutions with 64-channel multiples on both sides
// (the SR-GAN's 3x3 convs), on Hopper's wgmma, by shifted windows instead of gathered taps.
//
// Why: the implicit GEMM (dw^T = x taps * dy, Kd = n*p*q) gathers a tile of x per tap and
// k-tile: every x pixel crosses L2 once per tap (9x for 3x3), and on the H200 that engine ran
// 64 -> 64 at 256x256 in 0.134 ms, the slowest of the three passes (144 TFLOP/s).
// Here, for each kernel row r, a block stages one 64-pixel segment of a dy row and the x row it
// meets (64 + S - 1 pixels, zeros outside the image) and computes every tap s of that row:
//   dw[k][r][s][c] += sum over the segment's pixels q of dy[p][q][k] * x[p + r - pad][q + s - pad][c]
// With stride 1 tap s's x operand is the staged x row shifted by s pixels, i.e. the same tile
// read s 128-byte lines further on: one copy of x serves all S taps. Both operands are MN-major
// (pixels are the reduction; channels run along each 128-byte line), in wgmma's 128-byte swizzle,
// which the hardware applies to the address, so a start s lines into a 1024-byte group reads the
// shifted rows correctly.
//
// Grid: x = split (a fixed range of dy rows (n, p), every segment of each) x cluster rank,
// y = kernel row r, z = (64-channel chunk of k, 64-channel chunk of c). Block: one warpgroup with
// S accumulators of 64 (k) x 64 (c). Ring of stages (dy segment + x segment) filled by cp.async
// two steps ahead of the wgmma, one step of wgmma in flight behind it (copy_ring_sm90.cuh).
// The partials are few (conv2d_launch.hpp's plan, the same on every device), so where splits x
// kernel rows x chunks would leave SMs idle, a split's steps are shared by a cluster of 2 or 4
// blocks, whose sums rank 0 adds in rank order through distributed shared memory. Rank 0 writes
// its taps of its split's f32 partial ([split][k][r][s][c], the GEMM path's layout), summed in
// split order afterwards: no atomics, the same bits on every run on one GPU model (the cluster
// size follows the SM count).
#pragma once
#include <cooperative_groups.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "harness/memory/cuda_check.hpp"
#include "kernels/conv/conv2d_launch.hpp"
#include "kernels/core/check.hpp"
#include "kernels/core/copy_ring_sm90.cuh"
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/device_image.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/core/mma_sm80.cuh"
#include "kernels/core/wgmma_sm90.cuh"

namespace oomlab::ops::detail {

constexpr int kShiftedWgradChannels = 64;  // per chunk: one 128-byte line of 16-bit values
constexpr int kShiftedWgradPixels = 64;    // dy pixels per segment (4 wgmma k-steps of 16)
constexpr int kShiftedWgradThreads = 128;  // one warpgroup
constexpr int kShiftedWgradStages = 4;
constexpr int kShiftedWgradMaxS = 3;       // S accumulators of 32 registers a thread
constexpr int kShiftedWgradMaxCluster = 4;

template <class T>
struct ShiftedWgrad {
  const T* x;        // (n, h, w, c)
  const T* dy;       // (n, p, q, k)
  float* partials;   // [split][k][r][s][c]
  int H, W, C, P, Q, K, R, pad;
  int segments;      // per dy row: ceil(q / 64)
  int rows;          // n * p dy rows
  int rows_per_split;
  std::int64_t weights;  // k*r*s*c: one partial
};

// One stage: the dy segment (64 lines), then the x segment (64 + S - 1 lines, room for 72), each
// line 128 bytes, 1024-byte aligned groups of 8 lines.
constexpr int kShiftedWgradDyBytes = kShiftedWgradPixels * 128;
constexpr int kShiftedWgradXBytes = (kShiftedWgradPixels + 8) * 128;
constexpr int kShiftedWgradStageBytes = kShiftedWgradDyBytes + kShiftedWgradXBytes;
constexpr std::size_t kShiftedWgradSharedBytes = std::size_t{kShiftedWgradStageBytes} * kShiftedWgradStages + 1024;
static_assert(kShiftedWgradMaxS * 32 * kShiftedWgradThreads * sizeof(float) <=
                  std::size_t{kShiftedWgradStageBytes} * kShiftedWgradStages,
              "a cluster rank's sums fit in its ring");

template <class T, int S>
__global__ void __launch_bounds__(kShiftedWgradThreads, 3) shifted_wgrad_kernel(ShiftedWgrad<T> params) {
#if OOMLAB_IMAGE_SM90A
  extern __shared__ __align__(1024) unsigned char shared_raw[];
  unsigned char* stages = shared_raw + (1024 - shared_address(shared_raw) % 1024) % 1024;
  constexpr int kXLines = kShiftedWgradPixels + S - 1;
  constexpr int kAhead = kShiftedWgradStages - 2;

  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const int ranks = static_cast<int>(cluster.num_blocks()), rank = static_cast<int>(cluster.block_rank());
  const int split = blockIdx.x / ranks, r = blockIdx.y;
  const int k_chunks = params.K / kShiftedWgradChannels;
  const int k0 = blockIdx.z % k_chunks * kShiftedWgradChannels;
  const int c0 = blockIdx.z / k_chunks * kShiftedWgradChannels;
  const int row_begin = split * params.rows_per_split;
  const int row_end = min(row_begin + params.rows_per_split, params.rows);
  const int split_steps = (row_end - row_begin) * params.segments;
  const int step_begin = split_steps * rank / ranks;  // this rank's share of the split
  const int steps = split_steps * (rank + 1) / ranks - step_begin;

  // Step t: the split's step i = step_begin + t, i.e. dy row row_begin + i / segments, segment
  // i % segments, and the x row kernel row r meets.
  auto load_step = [&](int t) {
    unsigned char* stage = stages + (t % kShiftedWgradStages) * kShiftedWgradStageBytes;
    const int row = row_begin + (step_begin + t) / params.segments;
    const int q0 = (step_begin + t) % params.segments * kShiftedWgradPixels;
    const int n = row / params.P, p = row % params.P;
    const int h = p + r - params.pad;
    const T* dy_row = params.dy + (static_cast<std::int64_t>(row) * params.Q) * params.K + k0;
    for (int i = threadIdx.x; i < kShiftedWgradPixels * 8; i += kShiftedWgradThreads) {
      const int line = i / 8, chunk = i % 8, q = q0 + line;
      const bool valid = q < params.Q;
      cp_async_16(stage + swizzled_chunk_offset(line, chunk),
                  valid ? dy_row + static_cast<std::int64_t>(q) * params.K + chunk * 8 : params.dy, valid);
    }
    const bool h_inside = static_cast<unsigned>(h) < static_cast<unsigned>(params.H);
    const T* x_row = params.x + (static_cast<std::int64_t>(n) * params.H + h) * params.W * params.C + c0;
    unsigned char* x_tile = stage + kShiftedWgradDyBytes;
    for (int i = threadIdx.x; i < kXLines * 8; i += kShiftedWgradThreads) {
      const int line = i / 8, chunk = i % 8, w = q0 - params.pad + line;
      const bool valid = h_inside && static_cast<unsigned>(w) < static_cast<unsigned>(params.W);
      cp_async_16(x_tile + swizzled_chunk_offset(line, chunk),
                  valid ? x_row + static_cast<std::int64_t>(w) * params.C + chunk * 8 : params.x, valid);
    }
  };

  float acc[S][32];
#pragma unroll
  for (int s = 0; s < S; ++s)
#pragma unroll
    for (int i = 0; i < 32; ++i) acc[s][i] = 0.0f;

  run_copy_ring<kAhead>(steps, load_step, [&](int t) {
    const unsigned dy_at = shared_address(stages + (t % kShiftedWgradStages) * kShiftedWgradStageBytes);
    const unsigned x_at = dy_at + kShiftedWgradDyBytes;
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kShiftedWgradPixels / 16; ++ks) {
#pragma unroll
      for (int s = 0; s < S; ++s) {  // tap s: the x lines s further on
        wgmma_n64_mn_mn<T>(acc[s], wgmma_descriptor(dy_at + 2048 * ks), wgmma_descriptor(x_at + 128 * s + 2048 * ks));
      }
    }
    wgmma_commit();
    wgmma_wait<1>();
  });
  wgmma_wait<0>();
  cp_async_wait<0>();
  if (ranks > 1) {  // ranks > 0 publish their sums in their stages, rank 0 adds them in rank order
    float* sums = reinterpret_cast<float*>(stages);  // S x 32 x 128 floats: within the ring
    __syncthreads();  // every warp's wgmma is done with the stages
    if (rank != 0) {
#pragma unroll
      for (int s = 0; s < S; ++s)
#pragma unroll
        for (int i = 0; i < 32; ++i) sums[(s * 32 + i) * kShiftedWgradThreads + threadIdx.x] = acc[s][i];
    }
    cluster.sync();
    if (rank == 0) {
      for (int other = 1; other < ranks; ++other) {
        const float* theirs = cluster.map_shared_rank(sums, other);
#pragma unroll
        for (int s = 0; s < S; ++s)
#pragma unroll
          for (int i = 0; i < 32; ++i) acc[s][i] += theirs[(s * 32 + i) * kShiftedWgradThreads + threadIdx.x];
      }
    }
    cluster.sync();  // the other ranks' shared memory stays until rank 0 has read it
    if (rank != 0) return;
  }

  // Accumulator d[4j + e] of warp w, lane (g, t): k = 16w + g + 8 (e / 2), c = 8j + 2t + e % 2.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* partial = params.partials + split * params.weights;
#pragma unroll
  for (int s = 0; s < S; ++s)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int k = k0 + 16 * warp + lane / 4 + 8 * half, c = c0 + 8 * j + lane % 4 * 2;
        const std::int64_t at = ((static_cast<std::int64_t>(k) * params.R + r) * S + s) * params.C + c;
        *reinterpret_cast<float2*>(partial + at) = make_float2(acc[s][4 * j + 2 * half], acc[s][4 * j + 2 * half + 1]);
      }
#else
  __trap();
#endif
}

// Whether the shifted-window kernel takes g for a 16-bit dtype (the caller checks the dtype and
// device_runs_wgmma()): stride 1, at most 3 taps per kernel row, 64-channel multiples, 16-byte
// aligned tensors.
inline bool shifted_wgrad_applies(const Conv2dGeometry& g, const void* x, const void* dy) {
  return g.stride == 1 && g.s <= kShiftedWgradMaxS && g.c % kShiftedWgradChannels == 0 &&
         g.k % kShiftedWgradChannels == 0 && aligned16({x, dy});
}

// Fills partials [0, returned count), at most max_splits of them (dy rows shared out evenly).
template <class T>
int launch_shifted_wgrad(const Conv2dGeometry& g, const T* x, const T* dy, float* partials, int max_splits,
                         cudaStream_t stream) {
  ShiftedWgrad<T> params{};
  params.x = x, params.dy = dy, params.partials = partials;
  params.H = static_cast<int>(g.h), params.W = static_cast<int>(g.w), params.C = static_cast<int>(g.c);
  params.P = static_cast<int>(g.p), params.Q = static_cast<int>(g.q), params.K = static_cast<int>(g.k);
  params.R = static_cast<int>(g.r), params.pad = g.pad;
  params.segments = static_cast<int>((g.q + kShiftedWgradPixels - 1) / kShiftedWgradPixels);
  params.rows = static_cast<int>(g.n * g.p);
  params.rows_per_split = (params.rows + max_splits - 1) / max_splits;
  params.weights = g.k * g.r * g.s * g.c;
  const int splits = (params.rows + params.rows_per_split - 1) / params.rows_per_split;
  const std::int64_t chunk_pairs = (g.k / kShiftedWgradChannels) * (g.c / kShiftedWgradChannels);
  OOMLAB_CHECK(chunk_pairs <= 65535 && g.r <= 65535, "conv2d_backward_weight: grid too large for k " << g.k
                                                                                                   << " c " << g.c);
  // Clusters of 2 or 4 where one block per split would give fewer than two blocks per SM (the
  // kernel runs 3 per SM): 64 -> 64 3x3 has 64 splits x 3 rows = 192 blocks for 132 SMs.
  const int sms = current_device_sm_count();
  const std::int64_t blocks = splits * g.r * chunk_pairs;
  int cluster = 1;
  while (cluster < kShiftedWgradMaxCluster && blocks * cluster < 2 * sms) cluster *= 2;

  cudaLaunchAttribute cluster_shape{};
  cluster_shape.id = cudaLaunchAttributeClusterDimension;
  cluster_shape.val.clusterDim.x = static_cast<unsigned>(cluster);
  cluster_shape.val.clusterDim.y = 1;
  cluster_shape.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(splits * cluster), static_cast<unsigned>(g.r),
                        static_cast<unsigned>(chunk_pairs));
  config.blockDim = dim3(kShiftedWgradThreads);
  config.dynamicSmemBytes = kShiftedWgradSharedBytes;
  config.stream = stream;
  config.attrs = &cluster_shape;
  config.numAttrs = 1;
  const auto launch = [&](auto kernel) {
    allow_shared_bytes(kernel, kShiftedWgradSharedBytes);
    OOMLAB_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, params));
  };
  if (g.s == 1) {
    launch(shifted_wgrad_kernel<T, 1>);
  } else if (g.s == 2) {
    launch(shifted_wgrad_kernel<T, 2>);
  } else {
    launch(shifted_wgrad_kernel<T, 3>);
  }
  return splits;
}

}  // namespace oomlab::ops::detail
