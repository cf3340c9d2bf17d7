// The implicit-GEMM engine on Hopper's warpgroup tensor cores (sm_90a), for views whose A operand
// and B are contiguous along Kd (conv forward and backward-data): the same views and gathering loaders
// as implicit_gemm.cuh, but the products by wgmma.mma_async straight from shared memory
// (wgmma_sm90.cuh) instead of ldmatrix + mma.sync.
//
// Why: on the H200 the mma.sync kernels spend most issue slots outside the tensor cores (TF32
// needs twice the fragment loads and mma instructions of bf16 per FLOP); one wgmma does a
// 64 x BN x 32-byte step for a whole warpgroup from shared memory.
//
// Block: two warpgroups (256 threads), C tile 128 x BN (BN = 64 or 128), each warpgroup 64 rows.
// Every thread also gathers (cp.async, zero-fill for padding), into K-major 128-byte rows in
// wgmma's 128-byte swizzle: BK = 128 bytes of k (32 f32, 64 bf16/f16) per k-tile. Both operands
// must run along Kd (TF32 wgmma reads K-major tiles only; backward-data transposes its weights
// before the launch: one small pass instead of a shared-memory transpose in every k-tile).
// Ring (copy_ring_sm90.cuh): tile t in stage t % Stages; Stages - 2 tiles of copies in flight ahead of the math and
// one k-tile of wgmma in flight behind it, so the stage being refilled was read two k-tiles ago.
// Epilogue: accumulators -> staged output tile -> 16-byte stores (implicit_gemm.cuh).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "harness/memory/cuda_check.hpp"
#include "kernels/conv/implicit_gemm.cuh"
#include "kernels/core/copy_ring_sm90.cuh"
#include "kernels/core/device_image.cuh"
#include "kernels/core/wgmma_sm90.cuh"

namespace oomlab::ops::detail {

template <class T, int BN_, int Stages_>
struct Sm90GemmConfig {
  static constexpr bool kTf32 = std::is_same_v<T, float>;
  static constexpr int BM = 128, BN = BN_, Stages = Stages_;
  static constexpr int BK = 128 / static_cast<int>(sizeof(T));  // one 128-byte swizzled row
  static constexpr int kThreads = 256;                           // two warpgroups
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  static constexpr int kKSteps = 4;                              // 32-byte wgmma k-steps per k-tile
  static_assert(BN == 64 || BN == 128, "wgmma n 64 or 128");
  static_assert(Stages >= 3, "copies two k-tiles ahead of the wgmma in flight");
};

// A Rows x BK operand tile, K-major, in wgmma's 128-byte swizzle (see wgmma_sm90.cuh).
template <class Cfg, int Rows>
struct SwizzledTile {
  static constexpr int kContiguous = Cfg::BK;
  static constexpr int kElements = Rows * Cfg::BK;
  static_assert(Rows % 8 == 0, "whole 8-row swizzle groups");
  static __device__ __forceinline__ int index(int row, int kk) {
    return row * Cfg::BK + ((kk / Cfg::kVec) ^ (row % 8)) * Cfg::kVec + kk % Cfg::kVec;
  }
};

// The ring: each stage holds A's and B's swizzled tiles, 1024-byte aligned.
template <class View, class Cfg>
struct Sm90Layout {
  using ATile = SwizzledTile<Cfg, Cfg::BM>;
  using BTile = SwizzledTile<Cfg, Cfg::BN>;
  static constexpr int kStageElements =
      ((ATile::kElements + BTile::kElements) * static_cast<int>(sizeof(typename View::Elem)) + 1023) / 1024 * 1024 /
      static_cast<int>(sizeof(typename View::Elem));
  static constexpr std::size_t kBytes = static_cast<std::size_t>(kStageElements) * Cfg::Stages *
                                        sizeof(typename View::Elem);
};

template <class View, class Cfg>
constexpr std::size_t sm90_gemm_shared_bytes() {
  constexpr std::size_t output = OutputTile<View, Cfg>::kElements * sizeof(typename View::Out);
  return std::max(Sm90Layout<View, Cfg>::kBytes, output) + 1024;  // + room to align the ring to 1024 bytes
}

template <class View, class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads) implicit_gemm_sm90_kernel(View view) {
#if OOMLAB_IMAGE_SM90A
  static_assert(View::kAAlongK && View::kBAlongK, "wgmma TF32 operands must be K-major");
  using T = typename View::Elem;
  using Layout = Sm90Layout<View, Cfg>;
  using ATile = typename Layout::ATile;
  using BTile = typename Layout::BTile;
  constexpr int kStageElements = Layout::kStageElements;
  constexpr int kAhead = Cfg::Stages - 2;
  extern __shared__ __align__(1024) unsigned char shared_raw[];
  unsigned char* shared_bytes = shared_raw + (1024 - shared_address(shared_raw) % 1024) % 1024;
  T* stages = reinterpret_cast<T*>(shared_bytes);

  const int m0 = blockIdx.x * Cfg::BM;
  const int n0 = blockIdx.y * Cfg::BN;
  const int k_tiles = (view.Kd + Cfg::BK - 1) / Cfg::BK;
  const OperandLoader<View, ASide<View>, Cfg, Cfg::BM, true, ATile> a_loader(view, m0);
  const OperandLoader<View, BSide<View>, Cfg, Cfg::BN, true, BTile> b_loader(view, n0);
  auto load_stage = [&](int t) {
    T* stage = stages + (t % Cfg::Stages) * kStageElements;
    a_loader.load(view, stage, m0, t * Cfg::BK);
    b_loader.load(view, stage + ATile::kElements, n0, t * Cfg::BK);
  };

  const int warpgroup = threadIdx.x / 128;
  float acc[Cfg::BN / 2];
#pragma unroll
  for (int i = 0; i < Cfg::BN / 2; ++i) acc[i] = 0.0f;

  run_copy_ring<kAhead>(k_tiles, load_stage, [&](int t) {
    const T* stage = stages + (t % Cfg::Stages) * kStageElements;
    const T* b_tile = stage + ATile::kElements;
    const unsigned a_at = shared_address(stage + warpgroup * 64 * Cfg::BK);
    const unsigned b_at = shared_address(b_tile);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < Cfg::kKSteps; ++ks) {
      wgmma_tile<T, Cfg::BN>(acc, wgmma_descriptor(a_at + 32 * ks), wgmma_descriptor(b_at + 32 * ks));
    }
    wgmma_commit();
    wgmma_wait<1>();
  });
  wgmma_wait<0>();
  cp_async_wait<0>();
  __syncthreads();  // the stages are free for the output tile

  typename View::Out* c_tile = reinterpret_cast<typename View::Out*>(shared_bytes);
  const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int row0 = warpgroup * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < Cfg::BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      stage_output<View, Cfg>(view, c_tile, m0, n0, row0 + e / 2 * 8, j * 8 + lane % 4 * 2 + e % 2, acc[4 * j + e]);
    }
  __syncthreads();
  write_output_tile<View, Cfg>(view, c_tile, m0, n0);
#else
  __trap();
#endif
}

// Launches view's GEMM on wgmma: grid (M tiles, N tiles). Both operands gathered by 16-byte
// copies: the element-gather variants stay on mma.sync (rare shapes, and ptxas serialises their
// wgmma, C7515).
template <class View, class Cfg>
void launch_sm90_gemm(const View& view, cudaStream_t stream) {
  const dim3 grid(ceil_div(view.M, Cfg::BM), ceil_div(view.N, Cfg::BN));
  OOMLAB_CHECK(grid.y <= 65535, "conv2d: grid too large for N " << view.N);
  constexpr std::size_t bytes = sm90_gemm_shared_bytes<View, Cfg>();
  const auto kernel = implicit_gemm_sm90_kernel<View, Cfg>;
  allow_shared_bytes(kernel, bytes);
  kernel<<<grid, Cfg::kThreads, bytes, stream>>>(view);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace oomlab::ops::detail
