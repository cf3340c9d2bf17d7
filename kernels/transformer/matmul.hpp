// Matrix multiply through cuBLASLt: C = op(A) · op(B) (+ C or + R) (+ bias) (then GELU), row-major,
// f32 accumulation, f32/bf16/f16 (A, B, C and bias of one dtype). A bf16/f16 Linear on one row
// (a batch-1 decode step) runs our GEMV instead (gemv.cuh).
//
// Memory: the cuBLASLt handle is created once per CUDA device and lives for the process (it
// owns no device memory of ours). The workspace is kMatmulWorkspaceBytes taken from the device
// allocator (Tag::workspace) for each call and returned after it, on every backend (the one
// invariant, docs/architecture.md); the caching allocator makes it free after the first.
#pragma once
#include <cstddef>

#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

constexpr std::size_t kMatmulWorkspaceBytes = 32u << 20;  // NVIDIA's recommendation for Hopper

struct MatmulOptions {
  bool transpose_a = false;  // A is stored (K, M)
  bool transpose_b = false;  // B is stored (N, K): a PyTorch Linear weight
  bool accumulate = false;   // C += op(A)·op(B) instead of C =
  bool gelu = false;         // C = gelu(...) applied last (forward only: keeps no pre-activation)
};

// Shapes: with a 2-D B, A is (..., M, K) with any leading dims flattened into M (2-D only when
// transpose_a) and C is (..., M, N). With a 3-D B (batch, K, N), A is (batch, M, K) and C is
// (batch, M, N) (strided-batched). bias: (N) or undefined. residual: C's shape and dtype, another
// tensor than C, or undefined: C = op(A)·op(B) + bias + residual, the skip connection added by the
// GEMM's epilogue as it writes C instead of by a pass of its own (not with accumulate).
void matmul(Tensor& c, const Tensor& a, const Tensor& b, const Tensor& bias,
            const MatmulOptions& options = {}, const Tensor& residual = Tensor());

// Gradients of matmul without GELU: dA (overwritten), dB and dbias (ACCUMULATED, +=; dbias is
// f32 (N)). Any of the three may be undefined to skip it. dB and dbias follow the parameter
// gradient convention of every op here.
void matmul_backward(Tensor& da, Tensor& db, Tensor& dbias, const Tensor& dc, const Tensor& a,
                     const Tensor& b, const MatmulOptions& options = {});

namespace cuda {
struct MatmulShape {
  std::int64_t batch, m, n, k;
};
void matmul(Tensor& c, const Tensor& a, const Tensor& b, const Tensor& bias,
            const MatmulOptions& options, const Tensor& residual, const MatmulShape& shape,
            Tensor& workspace, memory::StreamHandle stream);
// dbias[n] += sum over rows of dc[row, n]; dc seen as (rows, N).
void column_sum_accumulate(Tensor& dbias, const Tensor& dc, memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
