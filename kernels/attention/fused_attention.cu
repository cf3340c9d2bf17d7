// Fused causal attention on cuda, flash-attention-2 style, bf16 in / f32 accumulate on tensor
// cores (mma.sync m16n8k16). Nothing T x T is ever stored.
//
// Forward (one block of 4 warps per 128 query rows and head for D = 64, 64 rows for D = 128;
// each warp owns 32 or 16 rows): Q stays in registers; 64-key K/V tiles stream through shared
// memory, double-buffered with cp.async; per tile S = Q K^T, the running row max / sum are
// updated (online softmax, exp2 with the scale folded into one FFMA) and O += P V with P taken
// straight from the S accumulators. Tiles above the diagonal are never visited, and the
// longest rows are scheduled first. Saves O and lse = rowmax + log(rowsum) (natural log).
//
// Backward (one block of 4 warps per head and 128 keys for D = 64, 64 keys for D = 128; each
// warp owns 32 or 16 keys, so every Q/dO fragment feeds two mma for D = 64): K and V stay in
// shared memory; 32-query tiles (Q, dO, lse, delta) from the diagonal down stream through
// shared memory, double-buffered with cp.async; per tile P^T = exp2(K Q^T * scale log2e -
// lse log2e) is recomputed, dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - delta),
// dK += dS^T Q (all from registers; P^T kept as bf16 fragments), and dS^T goes through shared
// memory (double-buffered) so the block adds its dQ = dS K share to an f32 accumulator with
// float2 atomics (two f32 atomics before compute 9.0); tile m-1's dQ product runs beside tile m's math, one barrier per
// tile. A preprocessing kernel computes delta = rowsum(dO * O), a postprocessing kernel scales and rounds dQ to bf16.
// Both directions hand out the longest causal blocks of every head first. On Hopper (sm_90a build, compute 9.0) the
// backward's main pass for D = 64 is flash_backward_sm90.cu's wgmma kernel instead (same algorithm, same scratch).
// Grouped-query attention (k, v of heads / group heads): the forward's block for query head h
// reads K/V head h / group; a backward block owns one K/V head's keys and walks the query tiles
// of each of its group's query heads in turn (flash::query_step), so dK and dV sum over the
// group in registers: no atomics on them, no scratch beyond multi-head attention's.
// Scratch: delta (heads, T) f32 and the dQ accumulator (heads, T, D) f32: linear in T.
// Fragments come from padded shared rows (row stride = 16 bytes mod 128) through ldmatrix,
// which keeps every 8-row access conflict-free.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <cuda_bf16.h>

#include "kernels/attention/attention_cuda.hpp"
#include "kernels/attention/flash_backward_sm90.hpp"
#include "kernels/attention/flash_common.cuh"
#include "kernels/core/device_image.cuh"
#include "kernels/core/engines.hpp"
#include "kernels/core/launch.cuh"
#include "kernels/core/mma_sm80.cuh"
#include "kernels/core/slow_kernel.hpp"
#include "kernels/core/wgmma_device.hpp"

namespace oomlab::ops::cuda {
namespace {

using flash::bf16;
using detail::cp_async_16;
using detail::cp_async_4;
using detail::cp_async_commit;
using detail::cp_async_wait_all;
using detail::ldmatrix_x4;
using detail::mma_16816;

using flash::accumulators_to_a;
using flash::backward_pointers_at_kv_head;
using flash::query_step;
using flash::QueryStep;
using flash::BlockWork;
using flash::block_work_longest_first;
using flash::kLn2;
using flash::kLog2e;
using flash::pack_bf16;
using flash::unpack_bf16;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;


// The device-side pieces from here to the forward kernel exist only in images of compute 8.0 and
// up (mma.sync on bf16, cp.async), as the kernels that use them (kernels/core/device_image.cuh).
#if OOMLAB_IMAGE_SM80

// ---------------------------------------------------------------------------------------------
// Warp-level building blocks. Fragment layouts of mma.m16n8k16 (PTX ISA), with g = lane / 4
// (the "group") and t = lane % 4:
//   A 16x16 row-major: a[0] = (g, 2t..2t+1), a[1] = (g+8, 2t..), a[2] = (g, 2t+8..), a[3] = (g+8, 2t+8..)
//   B 16x8 (k x n):    b[0] = (k 2t..2t+1, n g), b[1] = (k 2t+8..2t+9, n g)
//   C 16x8 f32:        c[0], c[1] = (g, 2t), (g, 2t+1); c[2], c[3] = (g+8, 2t), (g+8, 2t+1)
// Each 32-bit register holds two bf16, the lower-indexed element in the low half.

// A fragment of the 16x16 block at (row0, col0) of a row-major shared tile: blocks
// (row0, col0), (row0+8, col0), (row0, col0+8), (row0+8, col0+8) are a[0..3].
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const bf16* tile, int ld, int row0, int col0) {
  const int lane = threadIdx.x % 32;
  ldmatrix_x4(a, tile + (row0 + lane % 8 + lane / 8 % 2 * 8) * ld + col0 + lane / 16 * 8, false);
}

// A fragment of the 16x16 block A = X^T where X is stored row-major (X[k][m]): A(m, k) at
// tile[(k0 + k) * ld + m0 + m]. Blocks of X, transposed, ordered as a[0..3]: (k0, m0),
// (k0, m0+8), (k0+8, m0), (k0+8, m0+8).
__device__ __forceinline__ void load_a_transposed(uint32_t (&a)[4], const bf16* tile, int ld, int m0, int k0) {
  const int lane = threadIdx.x % 32;
  ldmatrix_x4(a, tile + (k0 + lane % 8 + lane / 16 * 8) * ld + m0 + lane / 8 % 2 * 8, true);
}

// B fragments (k0..k0+15) x (n-tiles n0 and n0+8) when the tile stores B^T row-major, i.e.
// tile[n][k] (K for S = Q K^T): blocks (n0, k0), (n0, k0+8) give b0, (n0+8, k0), (n0+8, k0+8) b1.
__device__ __forceinline__ void load_b_pair_from_nk(uint32_t (&b0)[2], uint32_t (&b1)[2], const bf16* tile,
                                                    int ld, int n0, int k0) {
  const int lane = threadIdx.x % 32;
  uint32_t r[4];
  ldmatrix_x4(r, tile + (n0 + lane % 8 + lane / 16 * 8) * ld + k0 + lane / 8 % 2 * 8, false);
  b0[0] = r[0]; b0[1] = r[1]; b1[0] = r[2]; b1[1] = r[3];
}

// B fragments (k0..k0+15) x (n-tiles n0 and n0+8) when the tile stores B row-major, i.e.
// tile[k][n] (V for O = P V): transposed blocks (k0, n0), (k0+8, n0) give b0, (k0, n0+8),
// (k0+8, n0+8) b1; thread (g, t) receives (B(k0+2t, n+g), B(k0+2t+1, n+g)) as the layout asks.
__device__ __forceinline__ void load_b_pair_from_kn(uint32_t (&b0)[2], uint32_t (&b1)[2], const bf16* tile,
                                                    int ld, int k0, int n0) {
  const int lane = threadIdx.x % 32;
  uint32_t r[4];
  ldmatrix_x4(r, tile + (k0 + lane % 8 + lane / 8 % 2 * 8) * ld + n0 + lane / 16 * 8, true);
  b0[0] = r[0]; b0[1] = r[1]; b1[0] = r[2]; b1[1] = r[3];
}

// at[0] += x, at[1] += y (8-byte aligned): one vector atomic from compute 9.0 on, where the float2
// overload of atomicAdd exists; two scalar atomics in older images (the A100/RTX path).
__device__ __forceinline__ void atomic_add_pair(float* at, float x, float y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(at), make_float2(x, y));
#else
  atomicAdd(at, x);
  atomicAdd(at + 1, y);
#endif
}

// ---------------------------------------------------------------------------------------------
// Global -> shared copies with cp.async (16 bytes per instruction; rows past `seq` are
// zero-filled, reading nothing, so tails need no other special case).


// Rows [row0, row0 + kRows) of a (seq, kHeadDim) head into a (kRows, ld) shared tile.
template <int kRows, int kHeadDim>
__device__ __forceinline__ void load_tile_async(bf16* tile, int ld, const bf16* head, int row0, int seq) {
  constexpr int kChunksPerRow = kHeadDim / 8;  // 8 bf16 = 16 bytes
  for (int chunk = threadIdx.x; chunk < kRows * kChunksPerRow; chunk += kThreads) {
    const int row = chunk / kChunksPerRow, col = chunk % kChunksPerRow * 8;
    const bool valid = row0 + row < seq;
    const bf16* source = valid ? head + static_cast<size_t>(row0 + row) * kHeadDim + col : head;
    cp_async_16(tile + row * ld + col, source, valid);
  }
}

#endif  // OOMLAB_IMAGE_SM80

// ---------------------------------------------------------------------------------------------
// Forward

template <int kHeadDim>
struct ForwardTiles {
  // Each warp owns kRowTiles m16 tiles, so every K/V fragment read from shared memory feeds
  // kRowTiles mma (D = 128 keeps one: its accumulators would not fit in registers twice).
  static constexpr int kRowTiles = kHeadDim <= 64 ? 2 : 1;
  static constexpr int kBlockM = kWarps * 16 * kRowTiles;  // query rows per block
  static constexpr int kBlockN = 64;                       // keys per K/V tile
  static constexpr int kLd = kHeadDim + 8;  // padded row: staggers banks, keeps 16 B alignment
  static constexpr int kTileElems = kBlockN * kLd;
  // sQ, then sK[2], then sV[2]
  static constexpr size_t kSharedBytes = (size_t(kBlockM) * kLd + 4 * size_t(kTileElems)) * sizeof(bf16);
};

template <int kHeadDim>
__global__ void __launch_bounds__(kThreads)
flash_forward_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
                     bf16* __restrict__ out, float* __restrict__ lse, int seq, int group, float scale_log2) {
#if OOMLAB_IMAGE_SM80
  using Tiles = ForwardTiles<kHeadDim>;
  constexpr int kRowTiles = Tiles::kRowTiles;
  constexpr int kBlockM = Tiles::kBlockM, kBlockN = Tiles::kBlockN, kLd = Tiles::kLd;
  constexpr int kDimSteps = kHeadDim / 16;  // k-steps of Q K^T
  constexpr int kKeyTiles = kBlockN / 8;    // n-tiles of S
  constexpr int kOutTiles = kHeadDim / 8;   // n-tiles of O
  extern __shared__ __align__(16) unsigned char shared_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(shared_raw);
  bf16* sK = sQ + kBlockM * kLd;
  bf16* sV = sK + 2 * Tiles::kTileElems;

  const BlockWork work = block_work_longest_first();
  const int m_block = gridDim.x - 1 - work.rank;  // the last rows see the most keys
  const int m0 = m_block * kBlockM;
  const size_t head = static_cast<size_t>(work.head) * seq * kHeadDim;
  const size_t kv_head = static_cast<size_t>(work.head / group) * seq * kHeadDim;  // grouped-query
  q += head; k += kv_head; v += kv_head; out += head;
  lse += static_cast<size_t>(work.head) * seq;
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  // Row tile r of this warp starts at warp_row0 + 16 r; this thread holds rows +g and +g+8.
  const int warp_row0 = m0 + warp * 16 * kRowTiles;

  // Causal: key tiles up to the one holding this block's last row.
  const int key_tiles = min((seq + kBlockN - 1) / kBlockN, (m0 + kBlockM + kBlockN - 1) / kBlockN);

  load_tile_async<kBlockM, kHeadDim>(sQ, kLd, q, m0, seq);
  load_tile_async<kBlockN, kHeadDim>(sK, kLd, k, 0, seq);
  load_tile_async<kBlockN, kHeadDim>(sV, kLd, v, 0, seq);
  cp_async_commit();

  uint32_t q_frag[kRowTiles][kDimSteps][4];
  float o_acc[kRowTiles][kOutTiles][4];
  float row_max[kRowTiles][2];  // in log2 units of the scaled scores
  float row_sum[kRowTiles][2];  // this thread's partial sums (reduced at the end)
  for (int r = 0; r < kRowTiles; ++r) {
    for (int d = 0; d < kOutTiles; ++d) o_acc[r][d][0] = o_acc[r][d][1] = o_acc[r][d][2] = o_acc[r][d][3] = 0.0f;
    row_max[r][0] = row_max[r][1] = -INFINITY;
    row_sum[r][0] = row_sum[r][1] = 0.0f;
  }

  for (int j = 0; j < key_tiles; ++j) {
    cp_async_wait_all();
    __syncthreads();  // tile j visible to all; every warp is done with tile j-1's buffer
    if (j == 0) {
      for (int r = 0; r < kRowTiles; ++r) {
        for (int s = 0; s < kDimSteps; ++s) load_a(q_frag[r][s], sQ, kLd, warp_row0 - m0 + 16 * r, s * 16);
      }
    }
    if (j + 1 < key_tiles) {
      const int next = (j + 1) & 1;
      load_tile_async<kBlockN, kHeadDim>(sK + next * Tiles::kTileElems, kLd, k, (j + 1) * kBlockN, seq);
      load_tile_async<kBlockN, kHeadDim>(sV + next * Tiles::kTileElems, kLd, v, (j + 1) * kBlockN, seq);
      cp_async_commit();
    }
    const bf16* tile_k = sK + (j & 1) * Tiles::kTileElems;
    const bf16* tile_v = sV + (j & 1) * Tiles::kTileElems;

    // S = Q K^T for this warp's rows x 64 keys
    float s_acc[kRowTiles][kKeyTiles][4];
    for (int r = 0; r < kRowTiles; ++r) {
      for (int n = 0; n < kKeyTiles; ++n) s_acc[r][n][0] = s_acc[r][n][1] = s_acc[r][n][2] = s_acc[r][n][3] = 0.0f;
    }
    for (int s = 0; s < kDimSteps; ++s) {
      for (int n = 0; n < kKeyTiles; n += 2) {
        uint32_t b0[2], b1[2];
        load_b_pair_from_nk(b0, b1, tile_k, kLd, n * 8, s * 16);
        for (int r = 0; r < kRowTiles; ++r) {
          mma_16816<bf16>(s_acc[r][n], q_frag[r][s], b0);
          mma_16816<bf16>(s_acc[r][n + 1], q_frag[r][s], b1);
        }
      }
    }

    // Mask keys after the row and past the end (only near the diagonal and in the last tile).
    // Scores stay unscaled until the exponent: the scale folds into one FFMA per score.
    const int n0 = j * kBlockN;
    const bool needs_mask = n0 + kBlockN - 1 > m0 || n0 + kBlockN > seq;
    if (needs_mask) {
      for (int r = 0; r < kRowTiles; ++r) {
        const int row_a = warp_row0 + 16 * r + g, row_b = row_a + 8;
        for (int n = 0; n < kKeyTiles; ++n) {
          for (int e = 0; e < 4; ++e) {
            const int key = n0 + n * 8 + 2 * t + (e & 1);
            const int row = e < 2 ? row_a : row_b;
            if (key > row || key >= seq) s_acc[r][n][e] = -INFINITY;
          }
        }
      }
    }

    // Online softmax: new row max over the 4 threads sharing a row (in log2 units of the
    // scaled scores), rescale what came before.
    for (int r = 0; r < kRowTiles; ++r) {
      float tile_max[2] = {-INFINITY, -INFINITY};  // unscaled
      for (int n = 0; n < kKeyTiles; ++n) {
        tile_max[0] = fmaxf(tile_max[0], fmaxf(s_acc[r][n][0], s_acc[r][n][1]));
        tile_max[1] = fmaxf(tile_max[1], fmaxf(s_acc[r][n][2], s_acc[r][n][3]));
      }
      float base[2], rescale[2];
      for (int h = 0; h < 2; ++h) {
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 1));
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 2));
        const float new_max = fmaxf(row_max[r][h], tile_max[h] * scale_log2);  // scale > 0
        base[h] = new_max == -INFINITY ? 0.0f : new_max;  // a fully masked row stays 0, not NaN
        rescale[h] = exp2f(row_max[r][h] - base[h]);
        row_max[r][h] = new_max;
        row_sum[r][h] *= rescale[h];
      }
      for (int n = 0; n < kKeyTiles; ++n) {
        s_acc[r][n][0] = exp2f(fmaf(s_acc[r][n][0], scale_log2, -base[0]));
        s_acc[r][n][1] = exp2f(fmaf(s_acc[r][n][1], scale_log2, -base[0]));
        s_acc[r][n][2] = exp2f(fmaf(s_acc[r][n][2], scale_log2, -base[1]));
        s_acc[r][n][3] = exp2f(fmaf(s_acc[r][n][3], scale_log2, -base[1]));
        row_sum[r][0] += s_acc[r][n][0] + s_acc[r][n][1];
        row_sum[r][1] += s_acc[r][n][2] + s_acc[r][n][3];
      }
      for (int d = 0; d < kOutTiles; ++d) {
        o_acc[r][d][0] *= rescale[0];
        o_acc[r][d][1] *= rescale[0];
        o_acc[r][d][2] *= rescale[1];
        o_acc[r][d][3] *= rescale[1];
      }
    }

    // O += P V, P straight from the S accumulators (rounded to bf16)
    for (int s = 0; s < kBlockN / 16; ++s) {
      uint32_t a[kRowTiles][4];
      for (int r = 0; r < kRowTiles; ++r) accumulators_to_a(a[r], s_acc[r][2 * s], s_acc[r][2 * s + 1]);
      for (int d = 0; d < kOutTiles; d += 2) {
        uint32_t b0[2], b1[2];
        load_b_pair_from_kn(b0, b1, tile_v, kLd, s * 16, d * 8);
        for (int r = 0; r < kRowTiles; ++r) {
          mma_16816<bf16>(o_acc[r][d], a[r], b0);
          mma_16816<bf16>(o_acc[r][d + 1], a[r], b1);
        }
      }
    }
  }

  // Epilogue: full row sums, normalise, store O and lse for rows inside the sequence.
  for (int r = 0; r < kRowTiles; ++r) {
    const int row_a = warp_row0 + 16 * r + g, row_b = row_a + 8;
    float inverse[2];
    for (int h = 0; h < 2; ++h) {
      row_sum[r][h] += __shfl_xor_sync(0xffffffffu, row_sum[r][h], 1);
      row_sum[r][h] += __shfl_xor_sync(0xffffffffu, row_sum[r][h], 2);
      inverse[h] = row_sum[r][h] > 0.0f ? 1.0f / row_sum[r][h] : 0.0f;
    }
    for (int d = 0; d < kOutTiles; ++d) {
      const int col = d * 8 + 2 * t;
      if (row_a < seq) {
        *reinterpret_cast<uint32_t*>(out + static_cast<size_t>(row_a) * kHeadDim + col) =
            pack_bf16(o_acc[r][d][0] * inverse[0], o_acc[r][d][1] * inverse[0]);
      }
      if (row_b < seq) {
        *reinterpret_cast<uint32_t*>(out + static_cast<size_t>(row_b) * kHeadDim + col) =
            pack_bf16(o_acc[r][d][2] * inverse[1], o_acc[r][d][3] * inverse[1]);
      }
    }
    if (t == 0) {
      if (row_a < seq) lse[row_a] = (row_max[r][0] + log2f(row_sum[r][0])) * kLn2;
      if (row_b < seq) lse[row_b] = (row_max[r][1] + log2f(row_sum[r][1])) * kLn2;
    }
  }
#else
  __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
// Backward

// delta_i = sum_d dO_id * O_id in f32; one warp per row.
template <int kHeadDim>
__global__ void flash_backward_delta_kernel(const bf16* __restrict__ out, const bf16* __restrict__ d_out,
                                            float* __restrict__ delta, size_t rows) {
  const size_t row = static_cast<size_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;  // whole warps leave together, so the shuffles below stay full
  const int lane = threadIdx.x % 32;
  float sum = 0.0f;
  for (int d = 2 * lane; d < kHeadDim; d += 64) {
    const float2 o = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(out + row * kHeadDim + d));
    const float2 g = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(d_out + row * kHeadDim + d));
    sum += o.x * g.x + o.y * g.y;
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) delta[row] = sum;
}

// dQ = scale * accumulator, rounded to bf16; four elements per thread (count is a multiple of
// the head dim, so of 4). kPermuted: the wgmma engine's accumulator (D = 64 rows whose 8-float
// chunks sit at flash::dq_chunk_slot).
template <bool kPermuted>
__global__ void flash_backward_dq_kernel(const float4* __restrict__ dq_accum, uint2* __restrict__ dq,
                                         size_t count4, float scale) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count4; i += stride) {
    const float4 x = dq_accum[i];
    size_t out = i;
    if (kPermuted) {  // 16 float4 per row of 64: slot i % 16 / 2 holds chunk dq_chunk_slot(row, slot)
      const size_t row = i / 16;
      const int slot = static_cast<int>(i % 16);
      out = row * 16 + flash::dq_chunk_slot(static_cast<int>(row % 8), slot / 2) * 2 + slot % 2;
    }
    dq[out] = make_uint2(pack_bf16(x.x * scale, x.y * scale), pack_bf16(x.z * scale, x.w * scale));
  }
}

template <int kHeadDim>
struct BackwardTiles {
  // Each warp owns kRowTiles m16 tiles of keys, so every Q/dO fragment read from shared memory
  // feeds kRowTiles mma (D = 128 keeps one: dK and dV accumulators fill the registers).
  static constexpr int kRowTiles = kHeadDim <= 64 ? 2 : 1;
  static constexpr int kBlockN = kWarps * 16 * kRowTiles;  // keys per block: 128 or 64
  static constexpr int kBlockM = 32;                       // queries per step
  static constexpr int kLd = kHeadDim + 8;                 // padded rows: ldmatrix without conflicts
  static constexpr int kLdS = kBlockM + 8;                 // dS^T rows in shared memory
  static constexpr int kQueryTileElems = kBlockM * kLd;
  static constexpr int kDsTileElems = kBlockN * kLdS;
  // dS^T double-buffered: tile m-1's dQ product runs while tile m is computed.
  static constexpr int kDsBuffers = 2;
  // bf16: sK, sV, sQ[2], sdO[2], sdS[kDsBuffers]; then f32: sLse[2], sDelta[2]
  static constexpr size_t kSharedBytes =
      (size_t(2 * kBlockN * kLd) + 4 * kQueryTileElems + kDsBuffers * kDsTileElems) * sizeof(bf16) +
      4 * kBlockM * sizeof(float);
};

template <int kHeadDim>
__global__ void __launch_bounds__(kThreads)
flash_backward_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
                      const bf16* __restrict__ d_out, const float* __restrict__ lse,
                      const float* __restrict__ delta, float* __restrict__ dq_accum,
                      bf16* __restrict__ dk, bf16* __restrict__ dv, int seq, int group, float scale,
                      float scale_log2) {
#if OOMLAB_IMAGE_SM80
  using Tiles = BackwardTiles<kHeadDim>;
  constexpr int kRowTiles = Tiles::kRowTiles;
  constexpr int kBlockM = Tiles::kBlockM, kBlockN = Tiles::kBlockN, kLd = Tiles::kLd, kLdS = Tiles::kLdS;
  constexpr int kDimSteps = kHeadDim / 16;    // k-steps over the head dim
  constexpr int kQuerySteps = kBlockM / 16;   // k-steps over the queries of a tile
  constexpr int kQueryTiles = kBlockM / 8;    // n-tiles of S^T
  constexpr int kOutTiles = kHeadDim / 8;     // n-tiles of dK, dV
  constexpr int kKeySteps = kBlockN / 16;     // k-steps of dQ = dS K
  // dQ = dS K work split: kQuerySteps row tiles of 16 queries, each shared by kWarpsPerRowTile
  // warps that take kDqTiles of the head dim's n-tiles each (loaded in pairs).
  constexpr int kWarpsPerRowTile = kWarps / kQuerySteps;
  constexpr int kDqTiles = kOutTiles / kWarpsPerRowTile;
  static_assert(kWarps % kQuerySteps == 0 && kDqTiles % 2 == 0 && kQueryTiles % 2 == 0, "tile split");
  static_assert(kBlockN % kBlockM == 0, "the first query tile starts at the block's first key");

  extern __shared__ __align__(16) unsigned char shared_raw[];
  bf16* sK = reinterpret_cast<bf16*>(shared_raw);
  bf16* sV = sK + kBlockN * kLd;
  bf16* sQ = sV + kBlockN * kLd;                  // [2][kBlockM][kLd]
  bf16* sdO = sQ + 2 * Tiles::kQueryTileElems;    // [2][kBlockM][kLd]
  bf16* sdS = sdO + 2 * Tiles::kQueryTileElems;   // [kDsBuffers][kBlockN][kLdS], dS^T
  float* sLse = reinterpret_cast<float*>(sdS + Tiles::kDsBuffers * Tiles::kDsTileElems);  // [2][kBlockM], natural log
  float* sDelta = sLse + 2 * kBlockM;                             // [2][kBlockM]

  const BlockWork work = block_work_longest_first();
  const int n0 = work.rank * kBlockN;  // the first keys see the most queries
  backward_pointers_at_kv_head(work.head, group, seq, kHeadDim, q, k, v, d_out, lse, delta, dq_accum, dk, dv);
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  // Key row tile r of this warp starts at warp_key0 + 16 r; this thread holds rows +g and +g+8.
  const int warp_key0 = n0 + warp * 16 * kRowTiles;
  const int warp_local0 = warp_key0 - n0;  // the same rows in sK, sV, sdS

  // Causal: query tiles from the one holding key n0 to the end.
  const int m_first = n0 / kBlockM;
  const int m_end = (seq + kBlockM - 1) / kBlockM;
  // Those tiles of every query head of the group, one after another (flash::query_step).
  const int tiles_per_head = m_end - m_first, steps = group * tiles_per_head;

  // Q, dO, lse and delta of step `step`'s query tile into buffer `buffer`, one cp.async group
  // (rows past the end are zero-filled).
  auto load_query_tile = [&](int step, int buffer) {
    const QueryStep at = query_step(step, m_first, tiles_per_head);
    const size_t rows = static_cast<size_t>(at.head) * seq, elements = rows * kHeadDim;
    const int m = at.m;
    load_tile_async<kBlockM, kHeadDim>(sQ + buffer * Tiles::kQueryTileElems, kLd, q + elements, m * kBlockM, seq);
    load_tile_async<kBlockM, kHeadDim>(sdO + buffer * Tiles::kQueryTileElems, kLd, d_out + elements, m * kBlockM,
                                       seq);
    for (int i = threadIdx.x; i < 2 * kBlockM; i += kThreads) {
      const int local = i % kBlockM, query = m * kBlockM + local;
      const bool valid = query < seq;
      const float* source = (i < kBlockM ? lse : delta) + rows + (valid ? query : 0);
      cp_async_4((i < kBlockM ? sLse : sDelta) + buffer * kBlockM + local, source, valid);
    }
    cp_async_commit();
  };

  // dQ[m * kBlockM + ...] of step `step`'s head and tile m += dS K over this block's keys, dS^T
  // of that tile in `tile_ds`: A(query, key) = tile_ds[key][query], B = K[key][d]. `valid` false
  // adds nothing.
  auto add_dq = [&](int step, const bf16* tile_ds, bool valid) {
    const QueryStep at = query_step(step, m_first, tiles_per_head);
    const int m = at.m;
    float* head_dq_accum = dq_accum + static_cast<size_t>(at.head) * seq * kHeadDim;
    const int row_tile = warp % kQuerySteps;
    const int d_first = warp / kQuerySteps * kDqTiles;
    float dq_acc[kDqTiles][4];
    for (int d = 0; d < kDqTiles; ++d) dq_acc[d][0] = dq_acc[d][1] = dq_acc[d][2] = dq_acc[d][3] = 0.0f;
    for (int s = 0; s < kKeySteps; ++s) {
      uint32_t a[4];
      load_a_transposed(a, tile_ds, kLdS, row_tile * 16, s * 16);
      for (int d = 0; d < kDqTiles; d += 2) {
        uint32_t b0[2], b1[2];
        load_b_pair_from_kn(b0, b1, sK, kLd, s * 16, (d_first + d) * 8);
        mma_16816<bf16>(dq_acc[d], a, b0);
        mma_16816<bf16>(dq_acc[d + 1], a, b1);
      }
    }
    const int query_a = m * kBlockM + row_tile * 16 + g, query_b = query_a + 8;
    for (int d = 0; d < kDqTiles; ++d) {
      const int col = (d_first + d) * 8 + 2 * t;
      if (valid && query_a < seq) {
        atomic_add_pair(head_dq_accum + static_cast<size_t>(query_a) * kHeadDim + col, dq_acc[d][0], dq_acc[d][1]);
      }
      if (valid && query_b < seq) {
        atomic_add_pair(head_dq_accum + static_cast<size_t>(query_b) * kHeadDim + col, dq_acc[d][2], dq_acc[d][3]);
      }
    }
  };

  load_tile_async<kBlockN, kHeadDim>(sK, kLd, k, n0, seq);
  load_tile_async<kBlockN, kHeadDim>(sV, kLd, v, n0, seq);
  load_query_tile(0, 0);  // one group with K and V
  // The first iteration's "previous tile" reads dS buffer 1: zeros, not stale bits.
  for (int i = threadIdx.x; i < Tiles::kDsTileElems / 2; i += kThreads) {
    reinterpret_cast<uint32_t*>(sdS + Tiles::kDsTileElems)[i] = 0u;
  }

  float dk_acc[kRowTiles][kOutTiles][4], dv_acc[kRowTiles][kOutTiles][4];
  for (int r = 0; r < kRowTiles; ++r) {
    for (int d = 0; d < kOutTiles; ++d) {
      for (int e = 0; e < 4; ++e) dk_acc[r][d][e] = dv_acc[r][d][e] = 0.0f;
    }
  }

  for (int step = 0; step < steps; ++step) {
    const int m = query_step(step, m_first, tiles_per_head).m;
    const int buffer = step & 1;
    cp_async_wait_all();
    __syncthreads();  // tile m and dS^T of the previous step visible; every warp is done with the
                      // previous step's Q/dO buffer and with the dS^T buffer written below (read
                      // two steps ago)
    if (step + 1 < steps) load_query_tile(step + 1, buffer ^ 1);
    // dQ of the previous step: its dS^T is complete since the barrier above, and the product is
    // independent of this tile's math, so the two interleave.
    // (1 barrier per tile instead of 2: measured 206 vs 199 TFLOP/s fwd+bwd at T = 4096.)
    add_dq(step > 0 ? step - 1 : 0, sdS + (buffer ^ 1) * Tiles::kDsTileElems, step > 0);
    bf16* tile_ds = sdS + buffer * Tiles::kDsTileElems;
    const bf16* tile_q = sQ + buffer * Tiles::kQueryTileElems;
    const bf16* tile_do = sdO + buffer * Tiles::kQueryTileElems;
    const float* tile_lse = sLse + buffer * kBlockM;
    const float* tile_delta = sDelta + buffer * kBlockM;
    const int m0 = m * kBlockM;

    // dS^T of this warp's keys x the tile's queries (zero where P is zero).
    float ds_acc[kRowTiles][kQueryTiles][4];
    for (int r = 0; r < kRowTiles; ++r) {
      for (int n = 0; n < kQueryTiles; ++n)
        ds_acc[r][n][0] = ds_acc[r][n][1] = ds_acc[r][n][2] = ds_acc[r][n][3] = 0.0f;
    }
    // No causal skip for warps whose keys all follow the tile's queries (the masked P and dS
    // come out zero): a branch here would split the code that should interleave with dQ above.
    {
      // S^T = K Q^T: this warp's keys x kBlockM queries
      float p_acc[kRowTiles][kQueryTiles][4];
      for (int r = 0; r < kRowTiles; ++r) {
        for (int n = 0; n < kQueryTiles; ++n) p_acc[r][n][0] = p_acc[r][n][1] = p_acc[r][n][2] = p_acc[r][n][3] = 0.0f;
      }
      for (int s = 0; s < kDimSteps; ++s) {
        uint32_t a[kRowTiles][4];
        for (int r = 0; r < kRowTiles; ++r) load_a(a[r], sK, kLd, warp_local0 + 16 * r, s * 16);
        for (int n = 0; n < kQueryTiles; n += 2) {
          uint32_t b0[2], b1[2];
          load_b_pair_from_nk(b0, b1, tile_q, kLd, n * 8, s * 16);
          for (int r = 0; r < kRowTiles; ++r) {
            mma_16816<bf16>(p_acc[r][n], a[r], b0);
            mma_16816<bf16>(p_acc[r][n + 1], a[r], b1);
          }
        }
      }

      // This thread's queries: columns n * 8 + 2t + j; lse in log2 units.
      float query_lse[kQueryTiles][2], query_delta[kQueryTiles][2];
      for (int n = 0; n < kQueryTiles; ++n) {
        for (int j = 0; j < 2; ++j) {
          query_lse[n][j] = tile_lse[n * 8 + 2 * t + j] * kLog2e;
          query_delta[n][j] = tile_delta[n * 8 + 2 * t + j];
        }
      }

      // P^T = exp(scale S^T - lse), zero where the query precedes the key or either is past the end
      const bool needs_mask = m0 < warp_key0 + 16 * kRowTiles || m0 + kBlockM > seq ||
                              warp_key0 + 16 * kRowTiles > seq;
      for (int r = 0; r < kRowTiles; ++r) {
        for (int n = 0; n < kQueryTiles; ++n) {
          for (int e = 0; e < 4; ++e) {
            const int query = m0 + n * 8 + 2 * t + (e & 1);
            const int key = warp_key0 + 16 * r + g + (e < 2 ? 0 : 8);
            const float p = exp2f(p_acc[r][n][e] * scale_log2 - query_lse[n][e & 1]);
            p_acc[r][n][e] = (needs_mask && (query < key || query >= seq || key >= seq)) ? 0.0f : p;
          }
        }
      }

      // P^T from here on only as bf16 A fragments (half the registers of the f32 accumulators).
      uint32_t p_frag[kRowTiles][kQuerySteps][4];
      for (int r = 0; r < kRowTiles; ++r) {
        for (int s = 0; s < kQuerySteps; ++s) accumulators_to_a(p_frag[r][s], p_acc[r][2 * s], p_acc[r][2 * s + 1]);
      }

      // dV += P^T dO
      for (int s = 0; s < kQuerySteps; ++s) {
        for (int d = 0; d < kOutTiles; d += 2) {
          uint32_t b0[2], b1[2];
          load_b_pair_from_kn(b0, b1, tile_do, kLd, s * 16, d * 8);
          for (int r = 0; r < kRowTiles; ++r) {
            mma_16816<bf16>(dv_acc[r][d], p_frag[r][s], b0);
            mma_16816<bf16>(dv_acc[r][d + 1], p_frag[r][s], b1);
          }
        }
      }

      // dP^T = V dO^T, then dS^T = P^T (dP^T - delta) (unscaled; the scale is applied to dK, dQ)
      for (int s = 0; s < kDimSteps; ++s) {
        uint32_t a[kRowTiles][4];
        for (int r = 0; r < kRowTiles; ++r) load_a(a[r], sV, kLd, warp_local0 + 16 * r, s * 16);
        for (int n = 0; n < kQueryTiles; n += 2) {
          uint32_t b0[2], b1[2];
          load_b_pair_from_nk(b0, b1, tile_do, kLd, n * 8, s * 16);
          for (int r = 0; r < kRowTiles; ++r) {
            mma_16816<bf16>(ds_acc[r][n], a[r], b0);
            mma_16816<bf16>(ds_acc[r][n + 1], a[r], b1);
          }
        }
      }
      // P^T of n-tile n: rows g (e = 0, 1) and g + 8 (e = 2, 3) in registers 2 (n % 2) and
      // 2 (n % 2) + 1 of fragment n / 2 (the accumulators_to_a layout).
      for (int r = 0; r < kRowTiles; ++r) {
        for (int n = 0; n < kQueryTiles; ++n) {
          const float2 p_top = unpack_bf16(p_frag[r][n / 2][n % 2 * 2]);
          const float2 p_bottom = unpack_bf16(p_frag[r][n / 2][n % 2 * 2 + 1]);
          ds_acc[r][n][0] = p_top.x * (ds_acc[r][n][0] - query_delta[n][0]);
          ds_acc[r][n][1] = p_top.y * (ds_acc[r][n][1] - query_delta[n][1]);
          ds_acc[r][n][2] = p_bottom.x * (ds_acc[r][n][2] - query_delta[n][0]);
          ds_acc[r][n][3] = p_bottom.y * (ds_acc[r][n][3] - query_delta[n][1]);
        }
      }

      // dK += dS^T Q
      for (int s = 0; s < kQuerySteps; ++s) {
        uint32_t a[kRowTiles][4];
        for (int r = 0; r < kRowTiles; ++r) accumulators_to_a(a[r], ds_acc[r][2 * s], ds_acc[r][2 * s + 1]);
        for (int d = 0; d < kOutTiles; d += 2) {
          uint32_t b0[2], b1[2];
          load_b_pair_from_kn(b0, b1, tile_q, kLd, s * 16, d * 8);
          for (int r = 0; r < kRowTiles; ++r) {
            mma_16816<bf16>(dk_acc[r][d], a[r], b0);
            mma_16816<bf16>(dk_acc[r][d + 1], a[r], b1);
          }
        }
      }
    }

    // dS^T to shared memory: dQ needs all keys of the block, spread over the warps.
    for (int r = 0; r < kRowTiles; ++r) {
      const int row = warp_local0 + 16 * r + g;
      for (int n = 0; n < kQueryTiles; ++n) {
        const int col = n * 8 + 2 * t;
        *reinterpret_cast<uint32_t*>(tile_ds + row * kLdS + col) = pack_bf16(ds_acc[r][n][0], ds_acc[r][n][1]);
        *reinterpret_cast<uint32_t*>(tile_ds + (row + 8) * kLdS + col) = pack_bf16(ds_acc[r][n][2], ds_acc[r][n][3]);
      }
    }
  }
  __syncthreads();  // the last tile's dS^T complete
  add_dq(steps - 1, sdS + ((steps - 1) & 1) * Tiles::kDsTileElems, true);

  // Epilogue: dK and dV (summed over the group) carry the softmax scale; store rows inside the
  // sequence.
  for (int r = 0; r < kRowTiles; ++r) {
    const int key_a = warp_key0 + 16 * r + g, key_b = key_a + 8;
    for (int d = 0; d < kOutTiles; ++d) {
      const int col = d * 8 + 2 * t;
      if (key_a < seq) {
        *reinterpret_cast<uint32_t*>(dk + static_cast<size_t>(key_a) * kHeadDim + col) =
            pack_bf16(dk_acc[r][d][0] * scale, dk_acc[r][d][1] * scale);
        *reinterpret_cast<uint32_t*>(dv + static_cast<size_t>(key_a) * kHeadDim + col) =
            pack_bf16(dv_acc[r][d][0], dv_acc[r][d][1]);
      }
      if (key_b < seq) {
        *reinterpret_cast<uint32_t*>(dk + static_cast<size_t>(key_b) * kHeadDim + col) =
            pack_bf16(dk_acc[r][d][2] * scale, dk_acc[r][d][3] * scale);
        *reinterpret_cast<uint32_t*>(dv + static_cast<size_t>(key_b) * kHeadDim + col) =
            pack_bf16(dv_acc[r][d][2], dv_acc[r][d][3]);
      }
    }
  }
#else
  __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
// kernel launchers

template <int kHeadDim>
void launch_forward(AttentionShape s, const void* q, const void* k, const void* v, void* out, float* lse,
                    cudaStream_t stream) {
  using Tiles = ForwardTiles<kHeadDim>;
  const float scale_log2 = kLog2e / std::sqrt(static_cast<float>(kHeadDim));
  const dim3 grid(ceil_div(static_cast<size_t>(s.seq), Tiles::kBlockM), static_cast<unsigned>(s.heads));
  allow_shared_bytes(flash_forward_kernel<kHeadDim>, Tiles::kSharedBytes);
  flash_forward_kernel<kHeadDim><<<grid, kThreads, Tiles::kSharedBytes, stream>>>(
      static_cast<const bf16*>(q), static_cast<const bf16*>(k), static_cast<const bf16*>(v),
      static_cast<bf16*>(out), lse, static_cast<int>(s.seq), static_cast<int>(s.group), scale_log2);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

template <int kHeadDim>
void launch_backward(AttentionShape s, const void* q, const void* k, const void* v, const void* out,
                     const float* lse, const void* d_out, float* delta, float* dq_accum, void* dq,
                     void* dk, void* dv, cudaStream_t stream) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  const size_t rows = static_cast<size_t>(s.heads) * s.seq;
  const size_t elements = rows * kHeadDim;

  flash_backward_delta_kernel<kHeadDim><<<ceil_div(rows, kWarps), kThreads, 0, stream>>>(
      static_cast<const bf16*>(out), static_cast<const bf16*>(d_out), delta, rows);
  OOMLAB_CUDA_CHECK_LAUNCH();
  OOMLAB_CUDA_CHECK(cudaMemsetAsync(dq_accum, 0, elements * sizeof(float), stream));

  const bool on_wgmma = kHeadDim == 64 && detail::device_runs_wgmma();
  if (on_wgmma) {
    flash::launch_backward_sm90_d64(static_cast<int>(s.heads), static_cast<int>(s.group), static_cast<int>(s.seq),
                                    q, k, v, d_out, lse, delta, dq_accum, dk, dv, scale, stream);
  } else {
    using Tiles = BackwardTiles<kHeadDim>;
    // One block per K/V head and key block; it walks its group's query heads.
    const dim3 grid(ceil_div(static_cast<size_t>(s.seq), Tiles::kBlockN), static_cast<unsigned>(s.heads / s.group));
    allow_shared_bytes(flash_backward_kernel<kHeadDim>, Tiles::kSharedBytes);
    flash_backward_kernel<kHeadDim><<<grid, kThreads, Tiles::kSharedBytes, stream>>>(
        static_cast<const bf16*>(q), static_cast<const bf16*>(k), static_cast<const bf16*>(v),
        static_cast<const bf16*>(d_out), lse, delta, dq_accum, static_cast<bf16*>(dk),
        static_cast<bf16*>(dv), static_cast<int>(s.seq), static_cast<int>(s.group), scale, scale * kLog2e);
    OOMLAB_CUDA_CHECK_LAUNCH();
  }

  constexpr unsigned kBlock = 256;
  const size_t count4 = elements / 4;
  unsigned blocks = ceil_div(count4, kBlock);
  if (blocks > 65535u * 8) blocks = 65535u * 8;  // grid-stride beyond this
  const auto dq_kernel = on_wgmma ? flash_backward_dq_kernel<true> : flash_backward_dq_kernel<false>;
  dq_kernel<<<blocks, kBlock, 0, stream>>>(reinterpret_cast<const float4*>(dq_accum), static_cast<uint2*>(dq),
                                           count4, scale);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

void check_head_dim(const char* op, std::int64_t head_dim) {
  if (head_dim != 64 && head_dim != 128) {
    throw std::invalid_argument(std::string(op) + ": head dim " + std::to_string(head_dim) +
                                " is not 64 or 128");
  }
}

}  // namespace

void fused_attention_forward(AttentionShape s, const void* q, const void* k, const void* v, void* out,
                             float* lse, memory::StreamHandle stream) {
  check_head_dim("fused_attention_forward", s.head_dim);
  require_tensor_cores("fused attention (forward)");
  // Once, unless the speed gate's test switch slows this family (kernels/core/slow_kernel.hpp).
  for (int i = 0, n = slow_kernel_launches("attention"); i < n; ++i) {
    if (s.head_dim == 64) launch_forward<64>(s, q, k, v, out, lse, as_cuda_stream(stream));
    else launch_forward<128>(s, q, k, v, out, lse, as_cuda_stream(stream));
  }
}

void fused_attention_backward(AttentionShape s, const void* q, const void* k, const void* v,
                              const void* out, const float* lse, const void* d_out, float* delta,
                              float* dq_accum, void* dq, void* dk, void* dv, memory::StreamHandle stream) {
  check_head_dim("fused_attention_backward", s.head_dim);
  require_tensor_cores("fused attention (backward)");
  if (s.head_dim == 64) {
    launch_backward<64>(s, q, k, v, out, lse, d_out, delta, dq_accum, dq, dk, dv, as_cuda_stream(stream));
  } else {
    launch_backward<128>(s, q, k, v, out, lse, d_out, delta, dq_accum, dq, dk, dv, as_cuda_stream(stream));
  }
}

}  // namespace oomlab::ops::cuda
