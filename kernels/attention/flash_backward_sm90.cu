// Fused causal attention backward on Hopper's warpgroup tensor cores (wgmma), head dim 64, bf16
// in / f32 accumulate. The algorithm is fused_attention.cu's (flash-attention-2): per block of
// keys, K and V stay in shared memory while query tiles stream past; P is recomputed from the
// forward's lse, dV += P^T dO, dS = P (dP - delta), dK += dS^T Q, and dQ += dS K goes to an f32
// accumulator shared by all key blocks. What changes is the instruction: one wgmma multiplies a
// warpgroup's 64 keys by a whole 64-query tile straight from shared memory, where mma.sync needed
// every warp to fetch its own fragments of Q and dO. On the H200 at B4 H12 T4096: ~300 TFLOP/s
// against the mma.sync kernel's ~192 (results/h200/README.md).
//
// Block: 2 warpgroups, 128 keys (64 each), one block per SM (the dK and dV accumulators and
// two score tiles take ~200 registers). Per 64-query tile:
//   S^T = K Q^T and dP^T = V dO^T  (shared x shared, K-major, both issued before waiting)
//   P^T = exp2(S^T scale log2e - lse log2e), causal mask near the diagonal and past the end
//   dV += P^T dO, dK += dS^T Q     (P^T, dS^T from registers; dO, Q read MN-major: the same
//                                   swizzled tiles, see wgmma_sm90.cuh)
//   dS^T -> shared memory, barrier, dQ(64 x 32 per warpgroup) = dS K over all 128 keys
//   (both operands MN-major), staged in shared memory and added to dq_accum by one bulk
//   asynchronous reduction per tile (cp.reduce.async.bulk, element-wise atomic adds done by the
//   copy engine: no atomics in the instruction stream, no registers held).
// Q, dO, lse and delta of tile m+1 load (cp.async, double-buffered) during tile m; S^T and dP^T
// are both issued before the first is waited for; dV/dK run while dS^T is stored. Masks are
// computed only for tiles that touch the diagonal or the end.
#include "kernels/attention/flash_backward_sm90.hpp"

#include <cstddef>
#include <cstdint>

#include "kernels/attention/flash_common.cuh"
#include "kernels/core/device_image.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/core/mma_sm80.cuh"
#include "kernels/core/wgmma_sm90.cuh"

namespace oomlab::ops::cuda::flash {
namespace {

using detail::cp_async_16;
using detail::cp_async_4;
using detail::cp_async_commit;
using detail::cp_async_wait_all;
using detail::fence_shared_for_wgmma;
using detail::shared_address;
using detail::wgmma_bf16_n32_mn_mn;
using detail::wgmma_bf16_n64_rs_mn;
using detail::wgmma_commit;
using detail::wgmma_descriptor;
using detail::wgmma_fence;
using detail::wgmma_tile;
using detail::wgmma_wait;

constexpr int kHeadDim = 64;
constexpr int kBlockN = 128;  // keys per block, 64 per warpgroup
constexpr int kBlockM = 64;   // queries per tile
constexpr int kThreads = 256;
constexpr int kRowBytes = kHeadDim * 2;      // one 128-byte swizzled line per row
// Q/dO/lse/delta: tile m+1 loads while tile m computes (dS^T and dQ: one tile each, as every
// product of a tile completes within it).
constexpr int kQueryBuffers = 2;

// Shared memory, byte offsets from a 1024-byte aligned base (every tile 1024-aligned).
constexpr int kKeyTileBytes = kBlockN * kRowBytes;    // K or V: 16 KiB
constexpr int kQueryTileBytes = kBlockM * kRowBytes;  // Q or dO of one tile: 8 KiB
constexpr int kDsTileBytes = kBlockN * kBlockM * 2;   // dS^T: a line of 64 queries per key
constexpr int kOffsetK = 0;
constexpr int kOffsetV = kOffsetK + kKeyTileBytes;
constexpr int kOffsetQ = kOffsetV + kKeyTileBytes;
constexpr int kOffsetDo = kOffsetQ + kQueryBuffers * kQueryTileBytes;
constexpr int kOffsetDs = kOffsetDo + kQueryBuffers * kQueryTileBytes;
constexpr int kOffsetLse = kOffsetDs + kDsTileBytes;  // f32, natural log
constexpr int kOffsetDelta = kOffsetLse + kQueryBuffers * kBlockM * 4;
// dQ of one tile, f32 [64][64] with each row's 8-float chunks permuted (dq_chunk_slot): the
// float2 stores of a half-warp (4 rows x 8 columns) hit 32 distinct banks, and the tile stays
// one contiguous run for one bulk reduction; the dQ rounding pass undoes the permutation.
constexpr int kOffsetDq = kOffsetDelta + kQueryBuffers * kBlockM * 4;
constexpr int kSharedBytes = kOffsetDq + kBlockM * kHeadDim * 4 + 1024;  // + room to align

// The device-side pieces from here to the kernel exist only in the sm_90a image, as the kernel
// that uses them (kernels/core/device_image.cuh).
#if OOMLAB_IMAGE_SM90A
constexpr int kStepBytes = 16 * kRowBytes;  // a k-step of 16 rows read MN-major

// Where query column c of a tile's lse / delta sits in shared memory: thread t of a quad uses
// columns 8j + 2t + h (j < 8, h < 2), stored together as 16 floats (four 16-byte loads).
__device__ __forceinline__ int statistics_slot(int c) { return c % 8 / 2 * 16 + c / 8 * 2 + c % 2; }

// Bulk asynchronous reduction (the TMA unit, no registers held): global[0, bytes) += shared,
// f32; tracked per issuing thread as a bulk group; bytes a multiple of 16.
__device__ __forceinline__ void bulk_reduce_add_f32(float* global, const float* shared, int bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n"
               ::"l"(global), "r"(shared_address(shared)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// This thread's bulk reductions have read their shared source (it may be rewritten).
__device__ __forceinline__ void bulk_wait_source_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// This thread's bulk reductions are complete.
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// 2^x on the special-function unit (flush-to-zero: probabilities below 2^-126 are 0 anyway).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// This thread's share of copying a [Rows][64] bf16 tile into the 128-byte swizzle (chunk c of
// row r at chunk c ^ (r % 8)): 16-byte chunk `chunk` of rows `row`, row + 32, ... (the same
// swizzle position in each, as 32 % 8 == 0).
struct TileCopySlot {
  int row, chunk, shared_offset;
  __device__ TileCopySlot()
      : row(threadIdx.x / 8), chunk(threadIdx.x % 8), shared_offset(row * kRowBytes + ((chunk ^ (row % 8)) * 16)) {}

  // Rows [row0, row0 + Rows) of a (seq, 64) head; rows past `seq` are zero-filled unread.
  template <int Rows>
  __device__ __forceinline__ void load(unsigned char* tile, const bf16* head, int row0, int seq) const {
    static_assert(Rows % (kThreads / 8) == 0, "whole passes of the block");
#pragma unroll
    for (int i = 0; i < Rows / (kThreads / 8); ++i) {
      const int source_row = row0 + row + i * (kThreads / 8);
      const bool valid = source_row < seq;
      cp_async_16(tile + shared_offset + i * (kThreads / 8) * kRowBytes,
                  head + static_cast<size_t>(valid ? source_row : 0) * kHeadDim + chunk * 8, valid);
    }
  }
};
#endif  // OOMLAB_IMAGE_SM90A

__global__ void __launch_bounds__(kThreads, 1)
flash_backward_sm90_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
                           const bf16* __restrict__ d_out, const float* __restrict__ lse,
                           const float* __restrict__ delta, float* __restrict__ dq_accum,
                           bf16* __restrict__ dk, bf16* __restrict__ dv, int seq, int group, float scale,
                           float scale_log2) {
#if OOMLAB_IMAGE_SM90A
  extern __shared__ __align__(1024) unsigned char shared_raw[];
  unsigned char* shared = shared_raw + (1024 - shared_address(shared_raw) % 1024) % 1024;
  unsigned char* sQ = shared + kOffsetQ;
  unsigned char* sDo = shared + kOffsetDo;
  unsigned char* sDs = shared + kOffsetDs;
  float* sLse = reinterpret_cast<float*>(shared + kOffsetLse);
  float* sDelta = reinterpret_cast<float*>(shared + kOffsetDelta);
  float* sDq = reinterpret_cast<float*>(shared + kOffsetDq);

  const BlockWork work = block_work_longest_first();
  const int n0 = work.rank * kBlockN;  // the first keys see the most queries
  backward_pointers_at_kv_head(work.head, group, seq, kHeadDim, q, k, v, d_out, lse, delta, dq_accum, dk, dv);

  const int warpgroup = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  // This thread's accumulator rows: keys key_local (+0, +8) of the block; columns 8j + 2t (+1).
  const int key_local = warpgroup * 64 + warp * 16 + g;
  const int key = n0 + key_local;

  const int m_first = n0 / kBlockM;  // causal: the first tile holding query n0
  const int m_end = (seq + kBlockM - 1) / kBlockM;
  // Those tiles of every query head of the group, one after another (flash::query_step).
  const int tiles_per_head = m_end - m_first, steps = group * tiles_per_head;

  const TileCopySlot copy;
  // Q, dO, lse and delta of step `step`'s query tile into its buffer: one cp.async group.
  auto load_query_tile = [&](int step) {
    const int buffer = step % kQueryBuffers;
    const QueryStep at = query_step(step, m_first, tiles_per_head);
    const size_t rows = static_cast<size_t>(at.head) * seq, elements = rows * kHeadDim;
    const int m = at.m;
    copy.load<kBlockM>(sQ + buffer * kQueryTileBytes, q + elements, m * kBlockM, seq);
    copy.load<kBlockM>(sDo + buffer * kQueryTileBytes, d_out + elements, m * kBlockM, seq);
    if (threadIdx.x < 2 * kBlockM) {
      const int local = threadIdx.x % kBlockM, query = m * kBlockM + local;
      const bool valid = query < seq, is_lse = threadIdx.x < kBlockM;
      const float* source = (is_lse ? lse : delta) + rows + (valid ? query : 0);
      cp_async_4((is_lse ? sLse : sDelta) + buffer * kBlockM + statistics_slot(local), source, valid);
    }
    cp_async_commit();
  };

  copy.load<kBlockN>(shared + kOffsetK, k, n0, seq);
  copy.load<kBlockN>(shared + kOffsetV, v, n0, seq);
  load_query_tile(0);  // one group with K and V

  // Descriptors, built once: a tile's next k-step or buffer is a constant added to its address
  // field (bytes / 16).
  const unsigned k_at = shared_address(shared + kOffsetK);
  const unsigned group_rows = warpgroup * 64 * kRowBytes;  // this warpgroup's keys in sK, sV
  const std::uint64_t k_rows_desc = wgmma_descriptor(k_at + group_rows);
  const std::uint64_t v_rows_desc = wgmma_descriptor(shared_address(shared + kOffsetV) + group_rows);
  const std::uint64_t k_columns_desc = wgmma_descriptor(k_at + 64 * warpgroup);  // dQ's 32 columns
  const std::uint64_t q_desc0 = wgmma_descriptor(shared_address(sQ));
  const std::uint64_t do_desc0 = wgmma_descriptor(shared_address(sDo));
  const std::uint64_t ds_desc = wgmma_descriptor(shared_address(sDs));
  constexpr std::uint64_t kKStep = 32 / 16, kMnStep = kStepBytes / 16, kBufferStep = kQueryTileBytes / 16;
  float dk_acc[32], dv_acc[32], s_acc[32], dp_acc[32], dq_acc[16];
  for (int i = 0; i < 32; ++i) dk_acc[i] = dv_acc[i] = s_acc[i] = dp_acc[i] = 0.0f;
  for (int i = 0; i < 16; ++i) dq_acc[i] = 0.0f;

  // dQ of tile m into the f32 accumulator: this warpgroup's 32 columns into sDq (after every
  // thread's fence and a barrier, the bulk-copy unit reads them) ...
  // The chunk permutation follows the accumulator's flat row (query head * seq + query), as the
  // rounding pass sees it; tiles start at multiples of 64 queries.
  auto stage_dq = [&](int step) {
    const size_t query_head = static_cast<size_t>(work.head) * group + query_step(step, m_first, tiles_per_head).head;
    const int head_row_base = static_cast<int>(query_head * seq % 8);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = warp * 16 + g + 8 * half;
        const int slot = dq_chunk_slot(head_row_base + row, warpgroup * 4 + j);
        *reinterpret_cast<float2*>(sDq + row * kHeadDim + slot * 8 + 2 * t) =
            make_float2(dq_acc[4 * j + 2 * half], dq_acc[4 * j + 2 * half + 1]);
      }
    }
    fence_shared_for_wgmma();
  };
  // ... and one thread adds the tile's rows inside the sequence (contiguous in dq_accum too).
  auto add_staged_dq = [&](int step) {
    if (threadIdx.x == 0) {
      const QueryStep at = query_step(step, m_first, tiles_per_head);
      const int rows = min(kBlockM, seq - at.m * kBlockM);
      const size_t first_row = static_cast<size_t>(at.head) * seq + static_cast<size_t>(at.m) * kBlockM;
      bulk_reduce_add_f32(dq_accum + first_row * kHeadDim, sDq, rows * kHeadDim * 4);
    }
  };

  for (int step = 0; step < steps; ++step) {
    const int m = query_step(step, m_first, tiles_per_head).m;
    const int buffer = step % kQueryBuffers;
    cp_async_wait_all();
    fence_shared_for_wgmma();  // this thread's copies of tile m, visible to the tensor cores
    __syncthreads();           // everyone's; and the previous step's products (its buffers) are done
    if (step > 0) add_staged_dq(step - 1);
    if (step + 1 < steps) load_query_tile(step + 1);
    const std::uint64_t q_desc = q_desc0 + buffer * kBufferStep, do_desc = do_desc0 + buffer * kBufferStep;
    const float* tile_lse = sLse + buffer * kBlockM;
    const float* tile_delta = sDelta + buffer * kBlockM;
    const int q0 = m * kBlockM;

    // S^T = K Q^T and dP^T = V dO^T: this warpgroup's 64 keys x 64 queries, k over the head dim.
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < kHeadDim / 16; ++s) {
      wgmma_tile<bf16, 64>(s_acc, k_rows_desc + kKStep * s, q_desc + kKStep * s, s > 0);
    }
    wgmma_commit();
#pragma unroll
    for (int s = 0; s < kHeadDim / 16; ++s) {
      wgmma_tile<bf16, 64>(dp_acc, v_rows_desc + kKStep * s, do_desc + kKStep * s, s > 0);
    }
    wgmma_commit();

    // This thread's queries' lse (log2 units) and delta: columns 8j + 2t + h at [2j + h].
    float query_lse[16], query_delta[16];
#pragma unroll
    for (int i = 0; i < 16; i += 4) {
      const float4 l = *reinterpret_cast<const float4*>(tile_lse + 16 * t + i);
      const float4 d = *reinterpret_cast<const float4*>(tile_delta + 16 * t + i);
      query_lse[i] = l.x * kLog2e, query_lse[i + 1] = l.y * kLog2e;
      query_lse[i + 2] = l.z * kLog2e, query_lse[i + 3] = l.w * kLog2e;
      query_delta[i] = d.x, query_delta[i + 1] = d.y, query_delta[i + 2] = d.z, query_delta[i + 3] = d.w;
    }

    // P^T = exp(scale S^T - lse); zero where the query precedes the key or either is past the
    // end (checked only in tiles near the diagonal or the end: a block-uniform branch).
    wgmma_wait<1>();
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      s_acc[i] = fast_exp2(fmaf(s_acc[i], scale_log2, -query_lse[i / 4 * 2 + (i & 1)]));
    }
    if (q0 < n0 + kBlockN || q0 + kBlockM > seq || n0 + kBlockN > seq) {
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const int query = q0 + 8 * (i / 4) + 2 * t + (i & 1);
        const int row_key = key + (i & 2) * 4;
        if (query < row_key || query >= seq || row_key >= seq) s_acc[i] = 0.0f;
      }
    }
    uint32_t p_frag[4][4], ds_frag[4][4];
#pragma unroll
    for (int s = 0; s < 4; ++s) accumulators_to_a(p_frag[s], s_acc + 8 * s, s_acc + 8 * s + 4);

    // dS^T = P^T (dP^T - delta) (unscaled: the scale is applied to dK and dQ at the end).
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const float d = query_delta[i / 4 * 2 + (i & 1)];
      dp_acc[i] = s_acc[i] * (dp_acc[i] - d);
    }
#pragma unroll
    for (int s = 0; s < 4; ++s) accumulators_to_a(ds_frag[s], dp_acc + 8 * s, dp_acc + 8 * s + 4);

    // dV += P^T dO and dK += dS^T Q, k over the tile's queries (dO and Q read MN-major).
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < 4; ++s) wgmma_bf16_n64_rs_mn(dv_acc, p_frag[s], do_desc + kMnStep * s, true);
#pragma unroll
    for (int s = 0; s < 4; ++s) wgmma_bf16_n64_rs_mn(dk_acc, ds_frag[s], q_desc + kMnStep * s, true);
    wgmma_commit();

    // dS^T to shared memory, a 128-byte line of queries per key: dQ needs all 128 keys.
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = key_local + 8 * half;
        *reinterpret_cast<uint32_t*>(sDs + row * kRowBytes + (j ^ (row % 8)) * 16 + 4 * t) =
            ds_frag[j / 2][j % 2 * 2 + half];
      }
    }
    fence_shared_for_wgmma();
    bulk_wait_source_read();  // the previous tile's dQ rows have left sDq
    __syncthreads();          // dS^T of both warpgroups complete; sDq free

    // dQ(64 queries x this warpgroup's 32 columns) = dS K over the block's 128 keys.
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < kBlockN / 16; ++s) {
      wgmma_bf16_n32_mn_mn(dq_acc, ds_desc + kMnStep * s, k_columns_desc + kMnStep * s, s > 0);
    }
    wgmma_commit();
    // Every product of the tile completes here: one left in flight across the loop's back edge
    // makes ptxas serialise every wgmma (C7515).
    wgmma_wait<0>();
    stage_dq(step);
  }
  __syncthreads();
  add_staged_dq(steps - 1);
  bulk_wait_all();

  // Epilogue: dK and dV (summed over the group) carry the softmax scale; store rows inside the
  // sequence.
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = key + 8 * half;
    if (row >= seq) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int col = 8 * j + 2 * t;
      const float* dk_pair = dk_acc + 4 * j + 2 * half;
      const float* dv_pair = dv_acc + 4 * j + 2 * half;
      *reinterpret_cast<uint32_t*>(dk + static_cast<size_t>(row) * kHeadDim + col) =
          pack_bf16(dk_pair[0] * scale, dk_pair[1] * scale);
      *reinterpret_cast<uint32_t*>(dv + static_cast<size_t>(row) * kHeadDim + col) = pack_bf16(dv_pair[0], dv_pair[1]);
    }
  }
#else
  __trap();
#endif
}

}  // namespace

void launch_backward_sm90_d64(int heads, int group, int seq, const void* q, const void* k, const void* v,
                              const void* d_out, const float* lse, const float* delta,
                              float* dq_accum, void* dk, void* dv, float scale, cudaStream_t stream) {
  // One block per K/V head and key block; it walks its group's query heads.
  const dim3 grid(ceil_div(static_cast<size_t>(seq), kBlockN), static_cast<unsigned>(heads / group));
  allow_shared_bytes(flash_backward_sm90_kernel, kSharedBytes);
  flash_backward_sm90_kernel<<<grid, kThreads, kSharedBytes, stream>>>(
      static_cast<const bf16*>(q), static_cast<const bf16*>(k), static_cast<const bf16*>(v),
      static_cast<const bf16*>(d_out), lse, delta, dq_accum, static_cast<bf16*>(dk), static_cast<bf16*>(dv), seq,
      group, scale, scale * kLog2e);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace oomlab::ops::cuda::flash
