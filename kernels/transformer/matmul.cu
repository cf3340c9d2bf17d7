// Matmul through cuBLASLt (launcher side), and the dbias column-sum kernel.
//
// Row-major C (M, N) is column-major C^T (N, M), so C = op(A)·op(B) is computed as
// C^T = op(B)^T · op(A)^T: cuBLAS's "A" is our B and its "B" is our A, with no copies.
#include <cublasLt.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/transformer/matmul.hpp"

namespace oomlab::ops {

namespace {

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: cublasStatus " + std::to_string(int(status)));
  }
}
#define OOMLAB_CUBLAS_CHECK(call) check_cublas((call), #call)

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

cudaDataType_t cuda_data_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    default: throw std::invalid_argument("matmul: no cuBLASLt type for " + std::string(dtype_name(dtype)));
  }
}

// Owns the cuBLASLt descriptors of one call.
struct LtCall {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~LtCall() {
    if (preference) cublasLtMatmulPreferenceDestroy(preference);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

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

}  // namespace

// CUDA kernels

// dbias[n] += sum over rows of dc[row, n]: a 32-column x 8-row-group block per tile of columns;
// each block sums its share of the rows and adds to global memory once per column.
template <class T>
__global__ void column_sum_kernel(float* dbias, const T* dc, std::size_t rows, std::size_t cols) {
  __shared__ float partial[8][33];
  std::size_t col = static_cast<std::size_t>(blockIdx.x) * 32 + threadIdx.x;
  float sum = 0.0f;
  if (col < cols) {
    for (std::size_t row = static_cast<std::size_t>(blockIdx.y) * 8 + threadIdx.y; row < rows;
         row += static_cast<std::size_t>(gridDim.y) * 8) {
      sum += to_f32(dc[row * cols + col]);
    }
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float total = 0.0f;
    for (int y = 0; y < 8; ++y) total += partial[y][threadIdx.x];
    atomicAdd(&dbias[col], total);
  }
}

// kernel launchers

namespace cuda {

void matmul(Tensor& c, const Tensor& a, const Tensor& b, const Tensor& bias,
            const MatmulOptions& options, const MatmulShape& s, Tensor& workspace,
            memory::StreamHandle stream) {
  if (s.m == 0 || s.n == 0) return;
  if (s.k == 0) {  // an empty sum: cuBLASLt rejects k = 0
    if (!options.accumulate && !bias.defined() && !options.gelu) c.zero();
    else throw std::invalid_argument("matmul: k = 0 with accumulate, bias or GELU is not supported");
    return;
  }
  cudaDataType_t type = cuda_data_type(a.dtype());
  bool b_batched = b.ndim() == 3;
  LtCall call;
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulDescCreate(&call.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t op_lt_a = options.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // our B
  cublasOperation_t op_lt_b = options.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // our A
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_lt_a, sizeof op_lt_a));
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_lt_b, sizeof op_lt_b));
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (bias.defined()) epilogue = options.gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  else if (options.gelu) epilogue = CUBLASLT_EPILOGUE_GELU;
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  if (bias.defined()) {
    const void* bias_pointer = bias.data();
    OOMLAB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                       &bias_pointer, sizeof bias_pointer));
  }
  // cuBLAS "A" = our B viewed column-major; "B" = our A; "C" = C^T (N x M, ld N).
  call.a = options.transpose_b ? make_layout(type, s.k, s.n, s.k, b_batched ? s.batch : 1, s.k * s.n)
                               : make_layout(type, s.n, s.k, s.n, b_batched ? s.batch : 1, s.k * s.n);
  call.b = options.transpose_a ? make_layout(type, s.m, s.k, s.m, s.batch, s.m * s.k)
                               : make_layout(type, s.k, s.m, s.k, s.batch, s.m * s.k);
  call.c = make_layout(type, s.n, s.m, s.n, s.batch, s.m * s.n);
  std::size_t workspace_bytes = workspace.nbytes();
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&call.preference));
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      call.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes));
  cublasLtHandle_t handle = lt_handle();
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  OOMLAB_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, call.op, call.a, call.b, call.c, call.c,
                                                     call.preference, 1, &heuristic, &found));
  if (found == 0) {
    throw std::runtime_error("matmul: cuBLASLt has no algorithm for " + a.describe() + " x " +
                             b.describe());
  }
  float alpha = 1.0f, beta = options.accumulate ? 1.0f : 0.0f;
  OOMLAB_CUBLAS_CHECK(cublasLtMatmul(handle, call.op, &alpha, b.data(), call.a, a.data(), call.b,
                                     &beta, c.data(), call.c, c.data(), call.c, &heuristic.algo,
                                     workspace.data(), workspace_bytes, as_cuda_stream(stream)));
}

void column_sum_accumulate(Tensor& dbias, const Tensor& dc, memory::StreamHandle stream) {
  std::size_t cols = static_cast<std::size_t>(dbias.numel());
  if (cols == 0 || dc.numel() == 0) return;
  std::size_t rows = static_cast<std::size_t>(dc.numel()) / cols;
  unsigned row_groups = ceil_div(rows, 8);
  if (row_groups > 64) row_groups = 64;
  dispatch_float(dc.dtype(), "matmul_backward dbias", [&](auto zero) {
    using T = decltype(zero);
    column_sum_kernel<T><<<dim3(ceil_div(cols, 32), row_groups), dim3(32, 8), 0, as_cuda_stream(stream)>>>(
        dbias.data_as<float>(), dc.data_as<const T>(), rows, cols);
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
