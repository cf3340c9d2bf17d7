// cuBLASLt plans for matmul: the descriptors and the chosen algorithm of one problem, built once
// and kept for the life of the process (include from .cu files only).
//
// Why: building descriptors and asking cuBLASLt's heuristic costs tens of microseconds of CPU per
// call, as long as a GPT-2-sized GEMM takes on the GPU. And the heuristic's first answer is not
// always the fastest: for a problem that overwrites C, the first call times the heuristic's top
// candidates on the caller's own buffers and keeps the fastest (like cudnn.benchmark). A problem
// that accumulates into C cannot be re-run without changing C, so it keeps the heuristic's first
// answer. Timing allocates nothing (the one invariant, docs/architecture.md).
#pragma once
#include <cublasLt.h>

#include <cstdint>

#include "harness/memory/source.hpp"

namespace oomlab::ops::cuda {

// Everything that selects an algorithm (pointers are not part of it).
struct MatmulProblem {
  int device = 0;
  cudaDataType_t type = CUDA_R_32F;
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false, b_batched = false, accumulate = false;
  bool add_input = false;  // C = ... + R, R another tensor (beta = 1 on it)
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  std::size_t workspace_bytes = 0;
  bool operator<(const MatmulProblem& other) const;
};

// Owns the cuBLASLt descriptors of one problem; lives in the plan cache.
struct MatmulPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLAS's view: a = our B
  cublasLtMatmulAlgo_t algo{};
  MatmulPlan() = default;
  MatmulPlan(const MatmulPlan&) = delete;
  MatmulPlan& operator=(const MatmulPlan&) = delete;
  ~MatmulPlan();
};

// Runs C = op(A)·op(B) (+ bias, GELU, + C or + R) with plan's descriptors; returns cuBLAS's status.
struct MatmulOperands {
  const void* a;      // our A
  const void* b;      // our B
  void* c;
  const void* input;  // R, read where C would be with accumulate; nullptr without
  const void* bias;   // nullptr without a bias epilogue
  void* workspace;
};
cublasStatus_t run_plan(MatmulPlan& plan, const cublasLtMatmulAlgo_t& algo, const MatmulProblem& problem,
                        const MatmulOperands& operands, cudaStream_t stream);

// The cached plan of `problem`, built (and, when allowed, tuned on `operands`) on first use.
MatmulPlan& matmul_plan(const MatmulProblem& problem, const MatmulOperands& operands, cudaStream_t stream);

cublasLtHandle_t lt_handle();

}  // namespace oomlab::ops::cuda
