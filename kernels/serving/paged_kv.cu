// Serving ops: CUDA kernels and launchers (paged_kv.hpp). One warp per head vector throughout:
// lane i owns elements i, i + 32, ... of D (D a multiple of 32, at most 256), so a K or V vector
// is read as one coalesced row of the token slot.
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/core/check.hpp"
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/serving/paged_kv.hpp"
#include "kernels/transformer/quantize_math.hpp"
#include "kernels/transformer/rope_math.hpp"

namespace oomlab::ops {
namespace {

constexpr int kWarp = 32;
constexpr int kMaxPerLane = 8;       // D <= 256
constexpr int kDecodeWarps = 16;     // warps of one (sequence, head, split) block: 4 groups each
constexpr int kDecodeUnroll = 4;     // tokens a warp loads before it reduces any: loads in flight

__device__ __forceinline__ float cache_to_f32(float v) { return v; }
__device__ __forceinline__ float cache_to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float cache_to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float cache_to_f32(std::int8_t v) { return static_cast<float>(v); }

template <class C> __device__ __forceinline__ C f32_to_cache(float v) { return from_f32<C>(v); }

// Where the block layout puts things (KvLayout, on the device): vector `index` of slot `slot` in a
// block of `tokens` slots is at (index * tokens + slot) * vector_stride; an int8 vector's scale
// follows its D codes.
struct SlotGeometry {
  std::size_t vector_stride;
  int kv_heads;
  int layer;
};

SlotGeometry geometry_of(const KvLayout& layout, std::int64_t layer) {
  return {layout.vector_stride(), static_cast<int>(layout.kv_heads), static_cast<int>(layer)};
}

__device__ __forceinline__ std::size_t vector_index(const SlotGeometry& g, int kv, int head) {
  return static_cast<std::size_t>((g.layer * 2 + kv) * g.kv_heads + head);
}

// ---------------------------------------------------------------------------------------------
// KV append: one warp per (row, K/V, KV head). A row's slot address is its vector 0's.
template <class Q, class C, bool kQuantized>
__global__ void kv_append_kernel(const std::int64_t* slots, const Q* qkv, int rows, int width, int heads, int dim,
                                 std::int64_t block_tokens, SlotGeometry g) {
  const int warp = static_cast<int>((static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp);
  const int lane = threadIdx.x % kWarp;
  const int per_row = 2 * g.kv_heads;
  if (warp >= rows * per_row) return;
  const int n = warp / per_row, kv = (warp % per_row) / g.kv_heads, head = warp % g.kv_heads;
  const Q* source = qkv + (static_cast<std::size_t>(n) * width + heads + kv * g.kv_heads + head) * dim;
  char* vector = reinterpret_cast<char*>(slots[n]) +
                 vector_index(g, kv, head) * static_cast<std::size_t>(block_tokens) * g.vector_stride;
  C* target = reinterpret_cast<C*>(vector);
  if constexpr (kQuantized) {
    float absmax = 0.0f;
    for (int d = lane; d < dim; d += kWarp) absmax = fmaxf(absmax, fabsf(to_f32(source[d])));
    absmax = warp_max(absmax);
    const float inverse = int8_inverse_scale(absmax);
    for (int d = lane; d < dim; d += kWarp) target[d] = quantize_int8(to_f32(source[d]), inverse);
    if (lane == 0) *reinterpret_cast<float*>(vector + dim) = int8_scale_from_absmax(absmax);
  } else {
    for (int d = lane; d < dim; d += kWarp) target[d] = f32_to_cache<C>(to_f32(source[d]));
  }
}

// ---------------------------------------------------------------------------------------------
// A lane's PL adjacent elements of a cache vector in one access: PL x sizeof(C) bytes when that is
// a vector width (2, 4, 8 or 16 bytes), else element by element.
template <class C, int PL>
struct alignas(PL * sizeof(C) <= 16 && (PL * sizeof(C) & (PL * sizeof(C) - 1)) == 0 ? PL * sizeof(C) : sizeof(C))
LaneVec {
  C v[PL];
};

// Paged decode, split-K (flash-decoding): block (split, head, sequence) of kDecodeWarps warps;
// warp w takes the split's tokens in groups of kDecodeUnroll (w, w + kDecodeWarps, ... groups),
// loading every key and value of a group before reducing any (decode is memory-bound: the loads of
// one token alone leave the memory system idle), with an online softmax; then the warps merge in
// shared memory and write the split's (acc[D], max, sum) to the partials. Lane i owns elements
// i * PL .. i * PL + PL - 1 of D = 32 PL, read in one access; a group's keys are adjacent in their
// block (one run of the head's keys), so a warp's loads are one contiguous stretch.
// block_tokens 0: the sequence's one block is its context long. Two blocks an SM for heads up to
// 128 (an int8 cache's 79 registers held it to one: half the loads in flight); wider heads keep
// their registers rather than spill.
template <class Q, class C, bool kQuantized, int PL>
__global__ void __launch_bounds__(kDecodeWarps * kWarp, PL <= 4 ? 2 : 1)
paged_decode_split_kernel(float* partials, const Q* qkv, const std::int64_t* block_table,
                          const std::int32_t* context_lens, int width, int heads, int max_blocks,
                          int block_tokens, int split_tokens, int splits, float scale, SlotGeometry g) {
  constexpr int dim = PL * kWarp;
  const int split = blockIdx.x, h = blockIdx.y, n = blockIdx.z;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int kv_head = h / (heads / g.kv_heads);
  const int context = context_lens[n];
  const int tokens = block_tokens == 0 ? context : block_tokens;
  const int begin = split * split_tokens;
  const int end = min(context, begin + split_tokens);

  float q[PL], acc[PL];
  const Q* query = qkv + (static_cast<std::size_t>(n) * width + h) * dim + lane * PL;
#pragma unroll
  for (int i = 0; i < PL; ++i) {
    q[i] = to_f32(query[i]) * scale;
    acc[i] = 0.0f;
  }
  float running_max = -FLT_MAX, running_sum = 0.0f;
  const std::int64_t* table = block_table + static_cast<std::size_t>(n) * max_blocks;
  // Each (K/V, head) run of a block starts index * tokens slots in; a lane reads its elements of it.
  const std::size_t run = static_cast<std::size_t>(tokens) * g.vector_stride;
  const std::size_t k_run = vector_index(g, 0, kv_head) * run, v_run = vector_index(g, 1, kv_head) * run;
  const std::size_t k_offset = k_run + lane * PL * sizeof(C), v_offset = v_run + lane * PL * sizeof(C);
  for (int first = begin + warp * kDecodeUnroll; first < end; first += kDecodeWarps * kDecodeUnroll) {
    LaneVec<C, PL> keys[kDecodeUnroll], values[kDecodeUnroll];
    float k_scale[kDecodeUnroll], v_scale[kDecodeUnroll];
#pragma unroll
    for (int u = 0; u < kDecodeUnroll; ++u) {
      const int t = first + u;
      k_scale[u] = v_scale[u] = 1.0f;
      if (t >= end) continue;
      const char* slot = reinterpret_cast<const char*>(table[t / tokens]) +
                         static_cast<std::size_t>(t % tokens) * g.vector_stride;
      keys[u] = *reinterpret_cast<const LaneVec<C, PL>*>(slot + k_offset);
      values[u] = *reinterpret_cast<const LaneVec<C, PL>*>(slot + v_offset);
      if constexpr (kQuantized) {  // the scale after the vector's D codes
        k_scale[u] = *reinterpret_cast<const float*>(slot + k_run + dim * sizeof(C));
        v_scale[u] = *reinterpret_cast<const float*>(slot + v_run + dim * sizeof(C));
      }
    }
    float scores[kDecodeUnroll];
#pragma unroll
    for (int u = 0; u < kDecodeUnroll; ++u) {
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < PL; ++i) dot += q[i] * cache_to_f32(keys[u].v[i]);
      scores[u] = first + u < end ? warp_sum(dot) * k_scale[u] : -FLT_MAX;
    }
    float new_max = running_max;
#pragma unroll
    for (int u = 0; u < kDecodeUnroll; ++u) new_max = fmaxf(new_max, scores[u]);
    const float correction = __expf(running_max - new_max);
    running_sum *= correction;
#pragma unroll
    for (int i = 0; i < PL; ++i) acc[i] *= correction;
#pragma unroll
    for (int u = 0; u < kDecodeUnroll; ++u) {
      if (first + u >= end) continue;
      const float p = __expf(scores[u] - new_max);
      running_sum += p;
#pragma unroll
      for (int i = 0; i < PL; ++i) acc[i] += p * cache_to_f32(values[u].v[i]) * v_scale[u];
    }
    running_max = new_max;
  }

  // Merge the warps: each publishes (max, sum, acc); warp 0 combines.
  __shared__ float shared_max[kDecodeWarps], shared_sum[kDecodeWarps];
  __shared__ float shared_acc[kDecodeWarps][dim];
  if (lane == 0) {
    shared_max[warp] = running_max;
    shared_sum[warp] = running_sum;
  }
#pragma unroll
  for (int i = 0; i < PL; ++i) shared_acc[warp][lane * PL + i] = acc[i];
  __syncthreads();
  if (warp != 0) return;
  float merged_max = -FLT_MAX;
  for (int w = 0; w < kDecodeWarps; ++w) merged_max = fmaxf(merged_max, shared_max[w]);
  float merged_sum = 0.0f, weights[kDecodeWarps];
  for (int w = 0; w < kDecodeWarps; ++w) {
    weights[w] = shared_sum[w] > 0.0f ? __expf(shared_max[w] - merged_max) : 0.0f;
    merged_sum += shared_sum[w] * weights[w];
  }
  float* partial = partials + ((static_cast<std::size_t>(n) * heads + h) * splits + split) * (dim + 2);
  for (int i = lane; i < dim; i += kWarp) {
    float merged = 0.0f;
    for (int w = 0; w < kDecodeWarps; ++w) merged += shared_acc[w][i] * weights[w];
    partial[i] = merged;
  }
  if (lane == 0) {
    partial[dim] = merged_max;
    partial[dim + 1] = merged_sum;  // 0 for a split past the context
  }
}

// Combine the splits of one (sequence, head) by their logsumexp: thread d owns output element d.
template <class Q>
__global__ void paged_decode_combine_kernel(Q* out, const float* partials, int heads, int dim, int splits) {
  const int h = blockIdx.x, n = blockIdx.y, d = threadIdx.x;
  if (d >= dim) return;
  const float* first = partials + (static_cast<std::size_t>(n) * heads + h) * splits * (dim + 2);
  float max_all = -FLT_MAX;
  for (int s = 0; s < splits; ++s) {
    const float* p = first + static_cast<std::size_t>(s) * (dim + 2);
    if (p[dim + 1] > 0.0f) max_all = fmaxf(max_all, p[dim]);
  }
  float sum = 0.0f, value = 0.0f;
  for (int s = 0; s < splits; ++s) {
    const float* p = first + static_cast<std::size_t>(s) * (dim + 2);
    if (p[dim + 1] <= 0.0f) continue;
    const float w = __expf(p[dim] - max_all);
    sum += p[dim + 1] * w;
    value += p[d] * w;
  }
  out[(static_cast<std::size_t>(n) * heads + h) * dim + d] = from_f32<Q>(value / sum);
}

// ---------------------------------------------------------------------------------------------
template <class T>
__global__ void rope_at_positions_kernel(T* x, const std::int32_t* positions, std::size_t pairs, int heads,
                                         int rotated_heads, int dim, float base) {
  const std::size_t p = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pairs) return;
  const int half = dim / 2;
  const std::size_t vector = p / static_cast<std::size_t>(half);  // (row, rotated head)
  const int i = static_cast<int>(p % static_cast<std::size_t>(half));
  const std::size_t row = vector / static_cast<std::size_t>(rotated_heads);
  const int head = static_cast<int>(vector % static_cast<std::size_t>(rotated_heads));
  T* a = x + (row * heads + head) * static_cast<std::size_t>(dim) + i;
  float first = to_f32(a[0]), second = to_f32(a[half]);
  rope_rotate_pair(first, second, rope_angle(positions[row], i, dim, base), false);
  a[0] = from_f32<T>(first);
  a[half] = from_f32<T>(second);
}

// ---------------------------------------------------------------------------------------------
constexpr int kArgmaxThreads = 256;

__device__ __forceinline__ bool better(float value, int index, float best, int best_index) {
  return value > best || (value == best && index < best_index);
}

template <class T>
__global__ void greedy_argmax_kernel(std::int32_t* tokens, const T* logits, int columns, int vocab) {
  const T* row = logits + static_cast<std::size_t>(blockIdx.x) * columns;
  float best = -INFINITY;
  int best_index = 0x7fffffff;
  for (int v = threadIdx.x; v < vocab; v += blockDim.x) {
    const float value = to_f32(row[v]);
    if (better(value, v, best, best_index)) {
      best = value;
      best_index = v;
    }
  }
  __shared__ float shared_best[kArgmaxThreads];
  __shared__ int shared_index[kArgmaxThreads];
  shared_best[threadIdx.x] = best;
  shared_index[threadIdx.x] = best_index;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride &&
        better(shared_best[threadIdx.x + stride], shared_index[threadIdx.x + stride], shared_best[threadIdx.x],
               shared_index[threadIdx.x])) {
      shared_best[threadIdx.x] = shared_best[threadIdx.x + stride];
      shared_index[threadIdx.x] = shared_index[threadIdx.x + stride];
    }
    __syncthreads();
  }
  // A row of NaNs (or -inf) keeps index 0, as the reference does.
  if (threadIdx.x == 0) tokens[blockIdx.x] = shared_index[0] == 0x7fffffff ? 0 : shared_index[0];
}

// Calls f(integral_constant<int, PL>) for a head of 32 PL elements (PL 1..8, as
// require_warp_head_dim allows).
template <class F>
void dispatch_lane_width(std::int64_t per_lane, F&& f) {
  switch (per_lane) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    case 8: return f(std::integral_constant<int, 8>{});
    default: throw std::invalid_argument("paged_decode_attention: head_dim / 32 is " + std::to_string(per_lane));
  }
}

void require_warp_head_dim(const char* op, std::int64_t dim) {
  if (dim % kWarp != 0 || dim > kWarp * kMaxPerLane) {
    throw std::invalid_argument(std::string(op) + ": the CUDA kernel takes a head_dim that is a multiple of 32 up to " +
                                std::to_string(kWarp * kMaxPerLane) + ", got " + std::to_string(dim));
  }
}

// Calls fn(C{}, quantized) with C the cache element type.
template <class Fn>
void dispatch_cache(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: return fn(float{}, std::false_type{});
    case DType::bf16: return fn(__nv_bfloat16{}, std::false_type{});
    case DType::f16: return fn(__half{}, std::false_type{});
    case DType::i8: return fn(std::int8_t{}, std::true_type{});
    default: throw std::invalid_argument(std::string("paged KV cache: no CUDA kernel for ") + dtype_name(dtype));
  }
}

}  // namespace

namespace cuda {

void kv_append(const KvLayout& layout, std::int64_t layer, const Tensor& slots, std::int64_t block_tokens,
               const Tensor& qkv, memory::StreamHandle stream) {
  require_warp_head_dim("kv_append", layout.head_dim);
  const std::int64_t rows = qkv.dim(0), width = qkv.dim(1), heads = width - 2 * layout.kv_heads;
  const std::size_t warps = static_cast<std::size_t>(rows * 2 * layout.kv_heads);
  if (warps == 0) return;
  const SlotGeometry g = geometry_of(layout, layer);
  dispatch_float(qkv.dtype(), "kv_append", [&](auto q_zero) {
    using Q = decltype(q_zero);
    dispatch_cache(layout.dtype, [&](auto c_zero, auto quantized) {
      using C = decltype(c_zero);
      constexpr unsigned kThreads = 128;
      kv_append_kernel<Q, C, decltype(quantized)::value><<<ceil_div(warps * kWarp, kThreads), kThreads, 0,
                                                          as_cuda_stream(stream)>>>(
          slots.data_as<std::int64_t>(), qkv.data_as<Q>(), static_cast<int>(rows), static_cast<int>(width),
          static_cast<int>(heads), static_cast<int>(layout.head_dim), block_tokens, g);
      OOMLAB_CUDA_CHECK_LAUNCH();
    });
  });
}

void paged_decode_attention(Tensor& out, const Tensor& qkv, const KvLayout& layout, std::int64_t layer,
                            const Tensor& block_table, std::int64_t block_tokens, const Tensor& context_lens,
                            std::int64_t split_tokens, Tensor& partials, memory::StreamHandle stream) {
  require_warp_head_dim("paged_decode_attention", layout.head_dim);
  const std::int64_t rows = qkv.dim(0), width = qkv.dim(1), heads = width - 2 * layout.kv_heads;
  if (rows == 0) return;
  const std::int64_t splits = partials.dim(2);
  if (splits > 65535 || heads > 65535 || rows > 65535 || block_tokens > (1 << 30) || split_tokens > (1 << 30)) {
    throw std::invalid_argument("paged_decode_attention: grid too large (splits, heads, sequences each <= 65535)");
  }
  const SlotGeometry g = geometry_of(layout, layer);
  const float scale = 1.0f / sqrtf(static_cast<float>(layout.head_dim));
  const int dim = static_cast<int>(layout.head_dim);
  dispatch_float(qkv.dtype(), "paged_decode_attention", [&](auto q_zero) {
    using Q = decltype(q_zero);
    dispatch_cache(layout.dtype, [&](auto c_zero, auto quantized) {
      using C = decltype(c_zero);
      const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(heads), static_cast<unsigned>(rows));
      dispatch_lane_width(dim / kWarp, [&](auto lane_width) {
        constexpr int PL = decltype(lane_width)::value;
        // A lane's elements sit at block + multiples of vector_stride and of PL elements: aligned
        // for its access when vector_stride is (blocks start at allocation alignment).
        OOMLAB_CHECK(g.vector_stride % alignof(LaneVec<C, PL>) == 0,
                     "paged_decode_attention: vectors of " << g.vector_stride << " bytes misalign a lane's "
                                                           << alignof(LaneVec<C, PL>) << "-byte access");
        paged_decode_split_kernel<Q, C, decltype(quantized)::value, PL>
            <<<grid, kDecodeWarps * kWarp, 0, as_cuda_stream(stream)>>>(
                partials.data_as<float>(), qkv.data_as<Q>(), block_table.data_as<std::int64_t>(),
                context_lens.data_as<std::int32_t>(), static_cast<int>(width), static_cast<int>(heads),
                static_cast<int>(block_table.dim(1)), static_cast<int>(block_tokens), static_cast<int>(split_tokens),
                static_cast<int>(splits), scale, g);
        OOMLAB_CUDA_CHECK_LAUNCH();
      });
    });
    const dim3 combine_grid(static_cast<unsigned>(heads), static_cast<unsigned>(rows));
    paged_decode_combine_kernel<Q><<<combine_grid, static_cast<unsigned>(dim), 0, as_cuda_stream(stream)>>>(
        out.data_as<Q>(), partials.data_as<float>(), static_cast<int>(heads), dim, static_cast<int>(splits));
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

void kv_copy_block(Tensor& to, std::int64_t to_tokens, const Tensor& from, std::int64_t from_tokens,
                   const KvLayout& layout, memory::StreamHandle stream) {
  // Every vector's run of from_tokens slots, one row of a 2-D copy, to its place in the longer block.
  const std::size_t run = static_cast<std::size_t>(from_tokens) * layout.vector_stride();
  OOMLAB_CUDA_CHECK(cudaMemcpy2DAsync(to.data(), static_cast<std::size_t>(to_tokens) * layout.vector_stride(),
                                      from.data(), run, run, layout.vectors_per_slot(), cudaMemcpyDeviceToDevice,
                                      as_cuda_stream(stream)));
}

void rope_at_positions(Tensor& x, std::int64_t rotated_heads, const Tensor& positions, float base,
                       memory::StreamHandle stream) {
  const std::size_t pairs = static_cast<std::size_t>(x.dim(0) * rotated_heads * (x.dim(2) / 2));
  if (pairs == 0) return;
  dispatch_float(x.dtype(), "rope_at_positions", [&](auto zero) {
    using T = decltype(zero);
    constexpr unsigned kThreads = 256;
    rope_at_positions_kernel<T><<<ceil_div(pairs, kThreads), kThreads, 0, as_cuda_stream(stream)>>>(
        x.data_as<T>(), positions.data_as<std::int32_t>(), pairs, static_cast<int>(x.dim(1)),
        static_cast<int>(rotated_heads), static_cast<int>(x.dim(2)), base);
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

void greedy_argmax(Tensor& tokens, const Tensor& logits, std::int64_t vocab, memory::StreamHandle stream) {
  if (logits.dim(0) == 0) return;
  dispatch_float(logits.dtype(), "greedy_argmax", [&](auto zero) {
    using T = decltype(zero);
    greedy_argmax_kernel<T><<<static_cast<unsigned>(logits.dim(0)), kArgmaxThreads, 0, as_cuda_stream(stream)>>>(
        tokens.data_as<std::int32_t>(), logits.data_as<T>(), static_cast<int>(logits.dim(1)), static_cast<int>(vocab));
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
