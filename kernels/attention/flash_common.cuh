// Pieces both fused-attention backward engines (mma.sync in fused_attention.cu, wgmma in
// flash_backward_sm90.cu) and the forward share: bf16 packing (and accumulators as the next
// product's A operand), the softmax's log2 constants, the longest-first block order, the
// backward's per-head pointers and walk over a query group, and the wgmma engine's dQ
// accumulator layout.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>

namespace oomlab::ops::cuda::flash {

using bf16 = __nv_bfloat16;

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

__device__ __forceinline__ uint32_t pack_bf16(float low, float high) {
  __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);  // .x (low half) = low
  return *reinterpret_cast<uint32_t*>(&pair);
}

// The f32 accumulators of two adjacent n-tiles (4 each, mma.sync's / wgmma's C layout: rows g
// and g+8, columns 2t, 2t+1) rounded to bf16: exactly the A fragment of the 16-wide k-step they
// cover, so a product's result feeds the next product without shuffles.
__device__ __forceinline__ void accumulators_to_a(uint32_t (&a)[4], const float* left, const float* right) {
  a[0] = pack_bf16(left[0], left[1]);
  a[1] = pack_bf16(left[2], left[3]);
  a[2] = pack_bf16(right[0], right[1]);
  a[3] = pack_bf16(right[2], right[3]);
}

// The two bf16 of a packed pair as floats (low half first): exact, a shift and a mask.
__device__ __forceinline__ float2 unpack_bf16(uint32_t pair) {
  return make_float2(__uint_as_float(pair << 16), __uint_as_float(pair & 0xffff0000u));
}

// The wgmma backward's dQ accumulator keeps each row's eight 8-float chunks permuted, chunk c of
// flat row r (head * seq + query) at slot c ^ (r % 8) (conflict-free staging in shared memory; flash_backward_sm90.cu);
// the dQ rounding pass reads it back through the same (self-inverse) map.
__device__ __forceinline__ int dq_chunk_slot(int row, int chunk) { return chunk ^ (row % 8); }

// Block order: blocks start in linear order (x fastest), and causal blocks differ up to
// T / 64-fold in work. Handing out rank r of every head before rank r + 1 of any (longest first
// across all heads, not just within one) keeps a long block from starting in the last wave.
// Grids are (blocks per head, heads); rank 0 is the longest.
struct BlockWork {
  int rank;
  int head;
};
__device__ __forceinline__ BlockWork block_work_longest_first() {
  const int linear = blockIdx.x + gridDim.x * blockIdx.y;
  return {linear / static_cast<int>(gridDim.y), linear % static_cast<int>(gridDim.y)};
}

// The backward kernels' pointers moved to K/V head `kv_head` (k, v, dk, dv) and to the first of
// the `group` query heads that read it (q, d_out, dq_accum; lse and delta): (heads, seq,
// head_dim) tensors and (heads, seq) row statistics, K/V-side tensors with heads / group heads.
// (The kernels' parameters are __restrict__, so are these references.)
using InBf16 = const bf16* __restrict__;
using InF32 = const float* __restrict__;
__device__ __forceinline__ void backward_pointers_at_kv_head(int kv_head, int group, int seq, int head_dim,
                                                             InBf16& q, InBf16& k, InBf16& v, InBf16& d_out,
                                                             InF32& lse, InF32& delta, float* __restrict__& dq_accum,
                                                             bf16* __restrict__& dk, bf16* __restrict__& dv) {
  const size_t kv_elements = static_cast<size_t>(kv_head) * seq * head_dim;
  const size_t query_rows = static_cast<size_t>(kv_head) * group * seq, query_elements = query_rows * head_dim;
  q += query_elements, d_out += query_elements, dq_accum += query_elements;
  lse += query_rows, delta += query_rows;
  k += kv_elements, v += kv_elements, dk += kv_elements, dv += kv_elements;
}

// A backward block walks the query tiles m_first.. of each of its group's query heads in turn,
// one pipeline for all, so dK and dV sum over the group in registers (no atomics, no scratch).
// Step `step` of the walk: query head `head` within the group, query tile `m`.
struct QueryStep {
  int head;
  int m;
};
__device__ __forceinline__ QueryStep query_step(int step, int m_first, int tiles_per_head) {
  return {step / tiles_per_head, m_first + step % tiles_per_head};
}

}  // namespace oomlab::ops::cuda::flash
