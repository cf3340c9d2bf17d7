// Naive causal attention on cuda: cuBLAS strided-batched GEMMs over the B*Hkv K/V heads, with the
// (T, T) scores materialised in the caller's `probs` (that buffer is the T^2 memory story), and
// two small row kernels: the causal softmax and its backward.
// Grouped-query attention costs no copy and no extra call: a K/V head's `group` query heads are
// adjacent, so their Q (and dO, dQ, P, dS) form one contiguous (group * T, D) or (group * T, T)
// matrix. Each batch entry is then one K/V head: S = Q_g K^T has group * T rows, and dK = dS_g^T Q_g
// and dV = P_g^T dO_g run k over group * T, which is the sum over the group's heads (in the
// GEMM's f32 accumulator). group = 1 gives exactly the multi-head calls.
#include <climits>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include <cublas_v2.h>
#include <unistd.h>

#include "kernels/attention/attention_cuda.hpp"
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"

namespace oomlab::ops::cuda {
namespace {

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: " + cublasGetStatusString(status));
  }
}

// One handle per GPU, created on first use and kept for the process. No workspace: every byte
// this op uses then comes from the caching allocator, so dry predicts cuda.
std::mutex handles_mutex;
std::map<int, cublasHandle_t>& handles() {
  static std::map<int, cublasHandle_t> by_device;
  return by_device;
}

// Destroyed at exit from a handler registered after CUDA's own (so it runs first, while the
// context lives): a static destructor can outlive the context, and a handle never destroyed
// leaves its 64 MiB of device memory as a leak under compute-sanitizer's leak check.
// A child forked after the handles were made inherits the handler, not the context: it skips.
pid_t handles_owner = 0;
void destroy_handles_at_exit() {
  std::lock_guard<std::mutex> lock(handles_mutex);
  if (getpid() != handles_owner) return;
  for (auto& [device, handle] : handles()) {
    if (cudaSetDevice(device) == cudaSuccess) cublasDestroy(handle);
  }
  handles().clear();
}

cublasHandle_t cublas_handle_for_current_device() {
  int device = 0;
  OOMLAB_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(handles_mutex);
  auto found = handles().find(device);
  if (found != handles().end()) return found->second;
  cublasHandle_t handle = nullptr;
  check_cublas(cublasCreate(&handle), "cublasCreate");
  check_cublas(cublasSetWorkspace(handle, nullptr, 0), "cublasSetWorkspace");
  if (handles().empty() && handles_owner == 0) {
    handles_owner = getpid();
    std::atexit(destroy_handles_at_exit);
  }
  handles().emplace(device, handle);
  return handle;
}

// Row-major C (m x n) = op(A) (m x k) * op(B) (k x n), batched over heads with strides. cuBLAS
// is column-major, and a row-major matrix is its column-major transpose, so compute
// C^T = op(B)^T op(A)^T: swap the operands and keep the transpose flags.
struct RowMajorGemm {
  bool trans_a, trans_b;
  int m, n, k;
  const void* a; int lda; long long stride_a;
  const void* b; int ldb; long long stride_b;
  void* c; int ldc; long long stride_c;
};

void gemm_batched(cublasHandle_t handle, const RowMajorGemm& g, int batch, cudaDataType type) {
  const float alpha = 1.0f, beta = 0.0f;
  check_cublas(cublasGemmStridedBatchedEx(
                   handle, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                   g.n, g.m, g.k, &alpha, g.b, type, g.ldb, g.stride_b, g.a, type, g.lda, g.stride_a,
                   &beta, g.c, type, g.ldc, g.stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
}

// Every thread gets the block-wide result. The leading barrier lets a block call this twice in a
// row without a fast warp overwriting `partial` while a slow one still reads the previous result.
template <bool kMax>
__device__ float block_reduce(float value) {
  __shared__ float partial[32];
  for (int offset = 16; offset > 0; offset /= 2) {
    float other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = kMax ? fmaxf(value, other) : value + other;
  }
  __syncthreads();
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
  __syncthreads();
  value = partial[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) {
    value = kMax ? fmaxf(value, partial[w]) : value + partial[w];
  }
  return value;
}

// CUDA kernels

// One block per (head, query) row: P_ij = softmax_j(scale * S_ij) over j <= i, zero above the
// diagonal; in place over the scores.
template <class Element>
__global__ void causal_softmax_kernel(Element* probs, int seq, float scale) {
  const int query = static_cast<int>(blockIdx.x % static_cast<unsigned>(seq));
  Element* row = probs + static_cast<size_t>(blockIdx.x) * seq;
  const int visible = query + 1;
  float row_max = -INFINITY;
  for (int j = threadIdx.x; j < visible; j += blockDim.x) row_max = fmaxf(row_max, to_f32(row[j]) * scale);
  row_max = block_reduce<true>(row_max);
  float row_sum = 0.0f;
  for (int j = threadIdx.x; j < visible; j += blockDim.x) row_sum += __expf(to_f32(row[j]) * scale - row_max);
  row_sum = block_reduce<false>(row_sum);  // its barriers order every read above before the writes
  const float inverse = 1.0f / row_sum;
  for (int j = threadIdx.x; j < seq; j += blockDim.x) {
    row[j] = from_f32<Element>(j < visible ? __expf(to_f32(row[j]) * scale - row_max) * inverse : 0.0f);
  }
}

// One block per row: dS_ij = scale * P_ij * (dP_ij - sum_j dP_ij P_ij), in place over dP; the
// scale is folded in here so the dQ and dK GEMMs are plain products.
template <class Element>
__global__ void causal_softmax_backward_kernel(const Element* probs, Element* grad, int seq, float scale) {
  const int query = static_cast<int>(blockIdx.x % static_cast<unsigned>(seq));
  const Element* p = probs + static_cast<size_t>(blockIdx.x) * seq;
  Element* g = grad + static_cast<size_t>(blockIdx.x) * seq;
  const int visible = query + 1;
  float row_dot = 0.0f;
  for (int j = threadIdx.x; j < visible; j += blockDim.x) row_dot += to_f32(g[j]) * to_f32(p[j]);
  row_dot = block_reduce<false>(row_dot);
  for (int j = threadIdx.x; j < seq; j += blockDim.x) {
    g[j] = from_f32<Element>(j < visible ? scale * to_f32(p[j]) * (to_f32(g[j]) - row_dot) : 0.0f);
  }
}

// kernel launchers

constexpr unsigned kRowThreads = 256;

template <class Element>
void launch_causal_softmax(AttentionShape s, void* probs, cudaStream_t stream) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  causal_softmax_kernel<Element><<<ceil_div(s.heads * s.seq, 1), kRowThreads, 0, stream>>>(
      static_cast<Element*>(probs), static_cast<int>(s.seq), scale);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

template <class Element>
void launch_causal_softmax_backward(AttentionShape s, const void* probs, void* grad, cudaStream_t stream) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  causal_softmax_backward_kernel<Element><<<ceil_div(s.heads * s.seq, 1), kRowThreads, 0, stream>>>(
      static_cast<const Element*>(probs), static_cast<Element*>(grad), static_cast<int>(s.seq), scale);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

// The GEMMs' sizes: one batch entry per K/V head, `rows` = group * T query rows in it.
struct GroupedSizes {
  int T, D, rows, kv_heads;
  long long td, tt, group_td, group_tt;  // element strides of a K/V head's and a group's blocks
};

GroupedSizes grouped_sizes(AttentionShape s) {
  if (s.group < 1 || s.heads % s.group != 0 || s.group * s.seq > INT_MAX) {
    throw std::invalid_argument("naive attention: group " + std::to_string(s.group) + " of " +
                                std::to_string(s.heads) + " heads at T " + std::to_string(s.seq));
  }
  const int T = static_cast<int>(s.seq), D = static_cast<int>(s.head_dim);
  const long long td = 1LL * T * D, tt = 1LL * T * T;
  return {T, D, static_cast<int>(s.group * s.seq), static_cast<int>(s.heads / s.group), td, tt,
          s.group * td, s.group * tt};
}

}  // namespace

void naive_attention_forward(AttentionShape s, bool is_bf16, const void* q, const void* k,
                             const void* v, void* probs, void* out, memory::StreamHandle stream) {
  cudaStream_t cuda_stream = as_cuda_stream(stream);
  cublasHandle_t handle = cublas_handle_for_current_device();
  check_cublas(cublasSetStream(handle, cuda_stream), "cublasSetStream");
  const cudaDataType type = is_bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const GroupedSizes z = grouped_sizes(s);
  // S = Q K^T (group T x T), unscaled: the softmax kernel applies the scale in f32.
  gemm_batched(handle, {false, true, z.rows, z.T, z.D, q, z.D, z.group_td, k, z.D, z.td, probs, z.T, z.group_tt},
               z.kv_heads, type);
  if (is_bf16) launch_causal_softmax<__nv_bfloat16>(s, probs, cuda_stream);
  else launch_causal_softmax<float>(s, probs, cuda_stream);
  // O = P V (group T x D)
  gemm_batched(handle, {false, false, z.rows, z.D, z.T, probs, z.T, z.group_tt, v, z.D, z.td, out, z.D, z.group_td},
               z.kv_heads, type);
}

void naive_attention_backward(AttentionShape s, bool is_bf16, const void* q, const void* k,
                              const void* v, const void* probs, const void* d_out, void* workspace,
                              void* dq, void* dk, void* dv, memory::StreamHandle stream) {
  cudaStream_t cuda_stream = as_cuda_stream(stream);
  cublasHandle_t handle = cublas_handle_for_current_device();
  check_cublas(cublasSetStream(handle, cuda_stream), "cublasSetStream");
  const cudaDataType type = is_bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const GroupedSizes z = grouped_sizes(s);
  // dV = P^T dO (T x D), k over the group's query rows
  gemm_batched(handle, {true, false, z.T, z.D, z.rows, probs, z.T, z.group_tt, d_out, z.D, z.group_td, dv, z.D, z.td},
               z.kv_heads, type);
  // dP = dO V^T (group T x T) into the workspace, then dS in place
  gemm_batched(handle,
               {false, true, z.rows, z.T, z.D, d_out, z.D, z.group_td, v, z.D, z.td, workspace, z.T, z.group_tt},
               z.kv_heads, type);
  if (is_bf16) launch_causal_softmax_backward<__nv_bfloat16>(s, probs, workspace, cuda_stream);
  else launch_causal_softmax_backward<float>(s, probs, workspace, cuda_stream);
  // dQ = dS K (group T x D), dK = dS^T Q (T x D, k over the group's query rows); dS already
  // carries the scale
  gemm_batched(handle, {false, false, z.rows, z.D, z.T, workspace, z.T, z.group_tt, k, z.D, z.td, dq, z.D, z.group_td},
               z.kv_heads, type);
  gemm_batched(handle, {true, false, z.T, z.D, z.rows, workspace, z.T, z.group_tt, q, z.D, z.group_td, dk, z.D, z.td},
               z.kv_heads, type);
}

}  // namespace oomlab::ops::cuda
