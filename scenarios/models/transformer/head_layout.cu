// Head layout permutes: one thread moves one run of P consecutive elements of a head row
// (P = 16 bytes of the wider dtype: 8 bf16, 4 f32) when head_dim and every pointer allow it,
// else P = 1. The token-major side is read (or written) fully coalesced; the head-major side in
// runs of head_dim elements (128 bytes for 64 bf16), so the permute runs at copy bandwidth.
// Index math is 32-bit with precomputed divisors (FastDivmod): the run index is split into
// (b, t, head of the row, run) with three multiply-high steps instead of 64-bit divisions; the
// row's head picks its tensor s and head h by two compares (q's H heads, then k's and v's Hkv).
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/conv/fast_divmod.cuh"
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "scenarios/models/transformer/head_layout.hpp"

namespace oomlab::model {
namespace {

using ops::detail::FastDivmod;

struct HeadPointers {
  void* p[3];
};

template <class T, int P>
struct alignas(sizeof(T) * P) ElementRun {
  T v[P];
};

// Divisors of the token-major run index i = ((b*T + t)*total_heads + row_head)*runs_per_head + run,
// row_head = start[s] + h.
struct RunGeometry {
  FastDivmod runs_per_head, total_heads, seq;
  int heads_of[3], start[3];  // H_s and the first row head of each tensor
  int seq_len, runs_per_head_value;
};

template <class HeadT, class TokenT, int P, bool kToHeads>
__global__ void permute_heads_kernel(HeadPointers heads, TokenT* tokens, RunGeometry g, int total_runs) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total_runs) return;
  int rest, run, row_head, bt, t, b;
  g.runs_per_head.divmod(i, rest, run);
  g.total_heads.divmod(rest, bt, row_head);
  g.seq.divmod(bt, b, t);
  const int s = row_head >= g.start[2] ? 2 : (row_head >= g.start[1] ? 1 : 0);
  const int h = row_head - (s == 0 ? 0 : (s == 1 ? g.start[1] : g.start[2]));
  const int num_heads = s == 0 ? g.heads_of[0] : (s == 1 ? g.heads_of[1] : g.heads_of[2]);
  const int head_run = ((b * num_heads + h) * g.seq_len + t) * g.runs_per_head_value + run;
  // A select, not heads.p[s]: a dynamic index into a kernel parameter array goes through local memory.
  void* head_base = s == 0 ? heads.p[0] : (s == 1 ? heads.p[1] : heads.p[2]);
  auto* head = static_cast<ElementRun<HeadT, P>*>(head_base);
  auto* token = reinterpret_cast<ElementRun<TokenT, P>*>(tokens);
  if constexpr (kToHeads) {
    const ElementRun<TokenT, P> in = token[i];
    ElementRun<HeadT, P> out;
#pragma unroll
    for (int k = 0; k < P; ++k) out.v[k] = from_f32<HeadT>(to_f32(in.v[k]));
    head[head_run] = out;
  } else {
    const ElementRun<HeadT, P> in = head[head_run];
    ElementRun<TokenT, P> out;
#pragma unroll
    for (int k = 0; k < P; ++k) out.v[k] = from_f32<TokenT>(to_f32(in.v[k]));
    token[i] = out;
  }
}

template <class HeadT, class TokenT, int P>
void launch_permute(const HeadPointers& heads, int count, void* tokens, std::int64_t batch,
                    std::int64_t seq, const std::int64_t* head_counts, std::int64_t head_dim, bool to_heads,
                    memory::StreamHandle stream) {
  const int runs_per_head = static_cast<int>(head_dim / P);
  std::int64_t total_heads = 0;
  for (int s = 0; s < count; ++s) total_heads += head_counts[s];
  const std::size_t total_runs = static_cast<std::size_t>(batch * seq * total_heads * runs_per_head);
  RunGeometry g{FastDivmod(runs_per_head), FastDivmod(static_cast<int>(total_heads)),
                FastDivmod(static_cast<int>(seq)), {0, 0, 0}, {0, 0, 0}, static_cast<int>(seq), runs_per_head};
  // Tensors past `count` start beyond the row, so no row head selects them.
  for (int s = 0, start = 0; s < 3; ++s) {
    g.heads_of[s] = s < count ? static_cast<int>(head_counts[s]) : 0;
    g.start[s] = s < count ? start : static_cast<int>(total_heads);
    start += g.heads_of[s];
  }
  constexpr unsigned kThreads = 256;
  const unsigned blocks = ceil_div(total_runs, kThreads);
  auto* token_ptr = static_cast<TokenT*>(tokens);
  if (to_heads) {
    permute_heads_kernel<HeadT, TokenT, P, true><<<blocks, kThreads, 0, as_cuda_stream(stream)>>>(
        heads, token_ptr, g, static_cast<int>(total_runs));
  } else {
    permute_heads_kernel<HeadT, TokenT, P, false><<<blocks, kThreads, 0, as_cuda_stream(stream)>>>(
        heads, token_ptr, g, static_cast<int>(total_runs));
  }
  OOMLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace

namespace cuda {

void permute_heads(void* const* heads, DType heads_dtype, int count, void* tokens,
                   DType tokens_dtype, std::int64_t batch, std::int64_t seq,
                   const std::int64_t* head_counts, std::int64_t head_dim, bool to_heads,
                   memory::StreamHandle stream) {
  const HeadPointers pointers{{heads[0], heads[1], heads[2]}};
  std::int64_t total_heads = 0;
  for (int s = 0; s < count; ++s) total_heads += head_counts[s];
  const std::int64_t total = batch * seq * total_heads * head_dim;
  if (total == 0) return;
  // The kernel's 32-bit indices (and FastDivmod's dividends) must stay below 2^31.
  if (total > std::numeric_limits<int>::max()) {
    throw std::invalid_argument("permute_heads: " + std::to_string(total) +
                                " elements exceed the 32-bit index range of the kernel");
  }
  dispatch_float(heads_dtype, "permute_heads", [&](auto head_zero) {
    using HeadT = decltype(head_zero);
    dispatch_float(tokens_dtype, "permute_heads", [&](auto token_zero) {
      using TokenT = decltype(token_zero);
      // Runs of 16 bytes of the wider dtype; the narrower side moves 8 bytes per run.
      constexpr int kRun = 16 / static_cast<int>(std::max(sizeof(HeadT), sizeof(TokenT)));
      const std::size_t head_run_bytes = sizeof(HeadT) * kRun, token_run_bytes = sizeof(TokenT) * kRun;
      bool vectorizable = head_dim % kRun == 0 &&
                          reinterpret_cast<std::uintptr_t>(tokens) % token_run_bytes == 0;
      for (int s = 0; s < count; ++s) {
        vectorizable = vectorizable && reinterpret_cast<std::uintptr_t>(heads[s]) % head_run_bytes == 0;
      }
      if (vectorizable) {
        launch_permute<HeadT, TokenT, kRun>(pointers, count, tokens, batch, seq, head_counts, head_dim,
                                            to_heads, stream);
      } else {
        launch_permute<HeadT, TokenT, 1>(pointers, count, tokens, batch, seq, head_counts, head_dim,
                                         to_heads, stream);
      }
    });
  });
}

}  // namespace cuda
}  // namespace oomlab::model
