// cuBLASLt plan cache for matmul: descriptors built once per problem, the algorithm chosen once
// (timed among the heuristic's candidates where C may be overwritten). See matmul_plan.cuh.
#include "kernels/transformer/matmul_plan.cuh"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "harness/memory/cuda_check.hpp"

namespace oomlab::ops::cuda {

namespace {

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: cublasStatus " + std::to_string(int(status)));
  }
}
#define OOMLAB_CUBLAS_CHECK(call) check_cublas((call), #call)

constexpr int kCandidates = 32;       // heuristic answers timed on first use
constexpr int kTimedRuns = 10;        // per candidate, after one warm-up run
constexpr float kKeepFirstWithin = 0.02f;  // the heuristic's first answer wins ties (stable picks)

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols,
                                   std::int64_t ld, std::int64_t batch, std::int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  OOMLAB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, rows, cols, ld));
  if (batch > 1) {
    int count = static_cast<int>(batch);
    OOMLAB_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                         &count, sizeof count));
    OOMLAB_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return layout;
}

// Row-major C (M, N) is column-major C^T (N, M), so C = op(A)·op(B) is computed as
// C^T = op(B)^T · op(A)^T: cuBLAS's "A" is our B and its "B" is our A, with no copies.
void build_descriptors(const MatmulProblem& p, MatmulPlan& plan) {
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t op_lt_a = p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // our B
  cublasOperation_t op_lt_b = p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // our A
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_lt_a, sizeof op_lt_a));
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_lt_b, sizeof op_lt_b));
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &p.epilogue,
                                                     sizeof p.epilogue));
  std::int64_t b_batch = p.b_batched ? p.batch : 1;
  plan.a = p.transpose_b ? make_layout(p.type, p.k, p.n, p.k, b_batch, p.k * p.n)
                         : make_layout(p.type, p.n, p.k, p.n, b_batch, p.k * p.n);
  plan.b = p.transpose_a ? make_layout(p.type, p.m, p.k, p.m, p.batch, p.m * p.k)
                         : make_layout(p.type, p.k, p.m, p.k, p.batch, p.m * p.k);
  plan.c = make_layout(p.type, p.n, p.m, p.n, p.batch, p.m * p.n);
}

std::vector<cublasLtMatmulAlgo_t> candidates(const MatmulProblem& p, MatmulPlan& plan, int count) {
  cublasLtMatmulPreference_t preference = nullptr;
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  std::unique_ptr<void, void (*)(void*)> guard(
      preference, [](void* pref) { cublasLtMatmulPreferenceDestroy(static_cast<cublasLtMatmulPreference_t>(pref)); });
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &p.workspace_bytes, sizeof p.workspace_bytes));
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(count));
  int found = 0;
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt_handle(), plan.op, plan.a, plan.b, plan.c, plan.c,
                                                     preference, count, results.data(), &found));
  std::vector<cublasLtMatmulAlgo_t> algos;
  for (int i = 0; i < found; ++i) {
    if (results[static_cast<std::size_t>(i)].state == CUBLAS_STATUS_SUCCESS)
      algos.push_back(results[static_cast<std::size_t>(i)].algo);
  }
  return algos;
}

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  OOMLAB_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

// Mean milliseconds of one run of `algo`, or a negative value when cuBLASLt refuses it.
float time_algo(MatmulPlan& plan, const cublasLtMatmulAlgo_t& algo, const MatmulProblem& p,
                const MatmulOperands& operands, cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop) {
  if (run_plan(plan, algo, p, operands, stream) != CUBLAS_STATUS_SUCCESS) return -1.0f;
  OOMLAB_CUDA_CHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < kTimedRuns; ++i) {
    if (run_plan(plan, algo, p, operands, stream) != CUBLAS_STATUS_SUCCESS) return -1.0f;
  }
  OOMLAB_CUDA_CHECK(cudaEventRecord(stop, stream));
  OOMLAB_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  OOMLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms / kTimedRuns;
}

// The fastest of the candidates on the caller's buffers; the first candidate unless another is
// more than kKeepFirstWithin faster, so timing noise does not flip the choice between runs.
cublasLtMatmulAlgo_t fastest(MatmulPlan& plan, const std::vector<cublasLtMatmulAlgo_t>& algos,
                             const MatmulProblem& p, const MatmulOperands& operands, cudaStream_t stream) {
  cudaEvent_t start = nullptr, stop = nullptr;
  OOMLAB_CUDA_CHECK(cudaEventCreate(&start));
  OOMLAB_CUDA_CHECK(cudaEventCreate(&stop));
  std::size_t best = 0;
  float first_ms = time_algo(plan, algos[0], p, operands, stream, start, stop);
  float best_ms = first_ms;
  for (std::size_t i = 1; i < algos.size(); ++i) {
    float ms = time_algo(plan, algos[i], p, operands, stream, start, stop);
    if (ms <= 0.0f) continue;
    bool beats_best = best_ms <= 0.0f || ms < best_ms;
    bool clearly_beats_first = first_ms <= 0.0f || ms < first_ms * (1.0f - kKeepFirstWithin);
    if (beats_best && clearly_beats_first) {
      best = i;
      best_ms = ms;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return algos[best];
}

}  // namespace

bool MatmulProblem::operator<(const MatmulProblem& o) const {
  return std::tie(device, type, batch, m, n, k, transpose_a, transpose_b, b_batched, accumulate, add_input,
                  epilogue, workspace_bytes) <
         std::tie(o.device, o.type, o.batch, o.m, o.n, o.k, o.transpose_a, o.transpose_b, o.b_batched,
                  o.accumulate, o.add_input, o.epilogue, o.workspace_bytes);
}

MatmulPlan::~MatmulPlan() {
  if (c) cublasLtMatrixLayoutDestroy(c);
  if (b) cublasLtMatrixLayoutDestroy(b);
  if (a) cublasLtMatrixLayoutDestroy(a);
  if (op) cublasLtMatmulDescDestroy(op);
}

// One handle per CUDA device for the life of the process (cuBLASLt handles are thread-safe and
// hold no per-call state; the workspace is passed to every call).
cublasLtHandle_t lt_handle() {
  static std::mutex mutex;
  static std::map<int, cublasLtHandle_t> handles;
  int device = 0;
  OOMLAB_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  auto found = handles.find(device);
  if (found != handles.end()) return found->second;
  cublasLtHandle_t handle = nullptr;
  OOMLAB_CUBLAS_CHECK(cublasLtCreate(&handle));
  handles.emplace(device, handle);
  return handle;
}

cublasStatus_t run_plan(MatmulPlan& plan, const cublasLtMatmulAlgo_t& algo, const MatmulProblem& p,
                        const MatmulOperands& operands, cudaStream_t stream) {
  // The bias pointer lives in the shared descriptor: set and launch under one lock (cuBLASLt reads
  // the descriptor while enqueueing, not later).
  static std::mutex descriptor_mutex;
  std::lock_guard<std::mutex> lock(descriptor_mutex);
  if (operands.bias) {
    OOMLAB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                       &operands.bias, sizeof operands.bias));
  }
  float alpha = 1.0f, beta = p.accumulate || p.add_input ? 1.0f : 0.0f;
  const void* input = p.add_input ? operands.input : operands.c;  // cuBLASLt's C; ours is its D
  return cublasLtMatmul(lt_handle(), plan.op, &alpha, operands.b, plan.a, operands.a, plan.b, &beta,
                        input, plan.c, operands.c, plan.c, &algo, operands.workspace,
                        p.workspace_bytes, stream);
}

MatmulPlan& matmul_plan(const MatmulProblem& problem, const MatmulOperands& operands, cudaStream_t stream) {
  static std::mutex mutex;
  static std::map<MatmulProblem, std::unique_ptr<MatmulPlan>> plans;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = plans.find(problem);
  if (found != plans.end()) return *found->second;
  auto plan = std::make_unique<MatmulPlan>();
  build_descriptors(problem, *plan);
  bool tune = !problem.accumulate && !capturing(stream);
  std::vector<cublasLtMatmulAlgo_t> algos = candidates(problem, *plan, tune ? kCandidates : 1);
  if (algos.empty()) {
    throw std::runtime_error("matmul: cuBLASLt has no algorithm for M=" + std::to_string(problem.m) +
                             " N=" + std::to_string(problem.n) + " K=" + std::to_string(problem.k) +
                             " batch=" + std::to_string(problem.batch));
  }
  plan->algo = algos.size() > 1 ? fastest(*plan, algos, problem, operands, stream) : algos[0];
  return *plans.emplace(problem, std::move(plan)).first->second;
}

}  // namespace oomlab::ops::cuda
