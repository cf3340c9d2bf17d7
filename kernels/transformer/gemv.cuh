// The one-row case of a Linear layer, y = x W^T (+ bias) (+ residual), as a GEMV that streams W
// once: decoding a token at batch 1 reads every weight for one multiply-add each. H200, LLaMA-7B's
// shapes (transformer_bench BM_Matmul/1/...): 3.51 / 3.84 / 3.25 / 3.58 / 4.19 TB/s for qkv,
// attention out, gate and up, down, LM head against cuBLAS's 3.46 / 2.86 / 3.62 / 3.19 / 4.00, a
// token's seven GEMVs 1.4% faster in all. At four rows it fell to 0.79x cuBLAS's, and a block a
// row (tried) lost on four of five shapes: one row only, this layout.
#pragma once
#include <cstdint>

#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops::cuda {

// Rows of x up to which the GEMV is taken (above it cuBLASLt's kernels win).
constexpr std::int64_t kGemvMaxRows = 1;

// y (m, n) = x (m, k) · w (n, k)^T + bias (n) + residual (m, n), bias and residual optional, all
// bf16 or f16, row-major and contiguous. Returns false, doing nothing, where it does not apply:
// another dtype, m other than 1..kGemvMaxRows, k not a whole number of 16-byte vectors, or a
// pointer off 16-byte alignment.
bool try_gemv(Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual,
              std::int64_t m, std::int64_t n, std::int64_t k, memory::StreamHandle stream);

}  // namespace oomlab::ops::cuda
