// RMSNorm: CUDA kernels and launchers, laid out like layernorm.cu (one warp per row, 128-bit
// accesses when possible, dweight reduced per block in shared memory: 4*C bytes).
#include "kernels/core/op_checks.hpp"
#include "kernels/transformer/rmsnorm.hpp"
#include "kernels/transformer/row_kernels.cuh"

namespace oomlab::ops {

// CUDA kernels

template <class T, int V>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* x, const T* weight, int rows,
                                       int cols, float eps) {
  int row = blockIdx.x * kRowWarps + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* x_row = x + static_cast<std::size_t>(row) * cols;
  float sum_sq = 0.0f;
  for (int c = lane * V; c < cols; c += 32 * V) {
    RowVec<T, V> v = load_row_vec<T, V>(x_row + c);
#pragma unroll
    for (int k = 0; k < V; ++k) sum_sq += to_f32(v.v[k]) * to_f32(v.v[k]);
  }
  float s = rsqrtf(warp_sum(sum_sq) / cols + eps);
  T* out_row = out + static_cast<std::size_t>(row) * cols;
  for (int c = lane * V; c < cols; c += 32 * V) {
    RowVec<T, V> v = load_row_vec<T, V>(x_row + c);
    RowVec<T, V> w = load_row_vec<T, V>(weight + c);
    RowVec<T, V> o;
#pragma unroll
    for (int k = 0; k < V; ++k) o.v[k] = from_f32<T>(to_f32(v.v[k]) * s * to_f32(w.v[k]));
    store_row_vec<T, V>(out_row + c, o);
  }
  if (lane == 0) rstd[row] = s;
}

// The same for few rows (a decode step's one token a sequence): a block of kRowBlockThreads per
// row, so a 4096-wide row is two 16-byte loads a thread instead of sixteen dependent ones a lane.
constexpr int kRowBlockThreads = 256;

template <class T, int V>
__global__ void __launch_bounds__(kRowBlockThreads)
rmsnorm_forward_row_block_kernel(T* out, float* rstd, const T* x, const T* weight, int cols, float eps) {
  __shared__ float warp_sums[kRowBlockThreads / 32];
  const int row = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const T* x_row = x + static_cast<std::size_t>(row) * cols;
  float sum_sq = 0.0f;
  for (int c = threadIdx.x * V; c < cols; c += kRowBlockThreads * V) {
    RowVec<T, V> v = load_row_vec<T, V>(x_row + c);
#pragma unroll
    for (int k = 0; k < V; ++k) sum_sq += to_f32(v.v[k]) * to_f32(v.v[k]);
  }
  sum_sq = warp_sum(sum_sq);
  if (lane == 0) warp_sums[warp] = sum_sq;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kRowBlockThreads / 32; ++w) total += warp_sums[w];
  const float s = rsqrtf(total / cols + eps);
  T* out_row = out + static_cast<std::size_t>(row) * cols;
  for (int c = threadIdx.x * V; c < cols; c += kRowBlockThreads * V) {
    RowVec<T, V> v = load_row_vec<T, V>(x_row + c);
    RowVec<T, V> w = load_row_vec<T, V>(weight + c);
    RowVec<T, V> o;
#pragma unroll
    for (int k = 0; k < V; ++k) o.v[k] = from_f32<T>(to_f32(v.v[k]) * s * to_f32(w.v[k]));
    store_row_vec<T, V>(out_row + c, o);
  }
  if (threadIdx.x == 0) rstd[row] = s;
}

template <class T, int V>
__global__ void rmsnorm_backward_kernel(T* dx, float* dweight, const T* dout, const T* x,
                                        const T* weight, const float* rstd, const T* residual, int rows,
                                        int cols) {
  extern __shared__ float column_sums[];  // dweight partial sums, cols
  for (int c = threadIdx.x; c < cols; c += blockDim.x) column_sums[c] = 0.0f;
  __syncthreads();
  int lane = threadIdx.x % 32;
  for (int row = blockIdx.x * kRowWarps + threadIdx.x / 32; row < rows; row += gridDim.x * kRowWarps) {
    std::size_t offset = static_cast<std::size_t>(row) * cols;
    float s = rstd[row];
    float sum_g_xhat = 0.0f;
    for (int c = lane * V; c < cols; c += 32 * V) {
      RowVec<T, V> xv = load_row_vec<T, V>(x + offset + c);
      RowVec<T, V> dv = load_row_vec<T, V>(dout + offset + c);
      RowVec<T, V> wv = load_row_vec<T, V>(weight + c);
#pragma unroll
      for (int k = 0; k < V; ++k) sum_g_xhat += to_f32(dv.v[k]) * to_f32(wv.v[k]) * to_f32(xv.v[k]) * s;
    }
    float mean_g_xhat = warp_sum(sum_g_xhat) / cols;
    for (int c = lane * V; c < cols; c += 32 * V) {
      RowVec<T, V> xv = load_row_vec<T, V>(x + offset + c);
      RowVec<T, V> dv = load_row_vec<T, V>(dout + offset + c);
      RowVec<T, V> wv = load_row_vec<T, V>(weight + c);
      RowVec<T, V> o, skip{};
      if (residual) skip = load_row_vec<T, V>(residual + offset + c);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        float d = to_f32(dv.v[k]);
        float xhat = to_f32(xv.v[k]) * s;
        o.v[k] = from_f32<T>(s * (d * to_f32(wv.v[k]) - xhat * mean_g_xhat) + to_f32(skip.v[k]));
        atomicAdd(&column_sums[c + k], d * xhat);
      }
      store_row_vec<T, V>(dx + offset + c, o);
    }
  }
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += blockDim.x) atomicAdd(&dweight[c], column_sums[c]);
}

// kernel launchers

namespace cuda {

void rmsnorm_forward(Tensor& out, Tensor& rstd, const Tensor& x, const Tensor& weight, float eps,
                     memory::StreamHandle stream) {
  int rows = checked_int(rows_of(x), "rmsnorm_forward rows");
  int cols = checked_int(x.dim(-1), "rmsnorm_forward C");
  if (rows == 0) return;
  dispatch_float(x.dtype(), "rmsnorm_forward", [&](auto zero) {
    using T = decltype(zero);
    // A warp a row fills the GPU from a few hundred rows on; below, a block a row.
    const bool few_rows = rows < 4 * current_device_sm_count();
    auto launch = [&](auto width) {
      constexpr int V = decltype(width)::value;
      if (few_rows) {
        rmsnorm_forward_row_block_kernel<T, V><<<rows, kRowBlockThreads, 0, as_cuda_stream(stream)>>>(
            out.data_as<T>(), rstd.data_as<float>(), x.data_as<const T>(), weight.data_as<const T>(), cols, eps);
      } else {
        rmsnorm_forward_kernel<T, V><<<ceil_div(rows, kRowWarps), kRowWarps * 32, 0, as_cuda_stream(stream)>>>(
            out.data_as<T>(), rstd.data_as<float>(), x.data_as<const T>(), weight.data_as<const T>(), rows, cols,
            eps);
      }
      OOMLAB_CUDA_CHECK_LAUNCH();
    };
    launch_with_row_width<T>(cols, {out.data(), x.data(), weight.data()}, launch);
  });
}

void rmsnorm_backward(Tensor& dx, Tensor& dweight, const Tensor& dout, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const Tensor& residual,
                      memory::StreamHandle stream) {
  int rows = checked_int(rows_of(x), "rmsnorm_backward rows");
  int cols = checked_int(x.dim(-1), "rmsnorm_backward C");
  if (rows == 0) return;
  std::size_t shared_bytes = static_cast<std::size_t>(cols) * sizeof(float);
  dispatch_float(x.dtype(), "rmsnorm_backward", [&](auto zero) {
    using T = decltype(zero);
    const T* skip = residual.defined() ? residual.data_as<const T>() : nullptr;
    auto launch = [&](auto width) {
      constexpr int V = decltype(width)::value;
      auto kernel = rmsnorm_backward_kernel<T, V>;
      allow_shared_bytes(kernel, shared_bytes, "rmsnorm_backward");
      kernel<<<row_reduction_grid(rows), kRowWarps * 32, shared_bytes, as_cuda_stream(stream)>>>(
          dx.data_as<T>(), dweight.data_as<float>(), dout.data_as<const T>(), x.data_as<const T>(),
          weight.data_as<const T>(), rstd.data_as<const float>(), skip, rows, cols);
      OOMLAB_CUDA_CHECK_LAUNCH();
    };
    launch_with_row_width<T>(cols, {dx.data(), dout.data(), x.data(), weight.data(), skip}, launch);
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
