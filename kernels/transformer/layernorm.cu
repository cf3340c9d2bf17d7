// LayerNorm: CUDA kernels and launchers. One warp per row; rows are read with 128-bit loads
// when C is a multiple of the pack width (768, 3072, ... always are).
// The backward for rows of up to 1024 columns (GPT-2 small and medium) keeps the row and its
// dweight/dbias column sums in registers: a lane owns the same columns in every row, so the
// sums need no atomics until the end, when the block adds its warps' sums in a fixed order and
// then adds them to global f32 (one atomicAdd per column per block, with only as many blocks
// as fit on the GPU at once). Wider or unaligned rows take the general kernel, which sums
// columns per block in shared memory with atomics (8*C bytes).
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/core/op_checks.hpp"
#include "kernels/transformer/layernorm.hpp"
#include "kernels/transformer/row_kernels.cuh"

namespace oomlab::ops {

// CUDA kernels

template <class T, int V>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* x,
                                         const T* weight, const T* bias, int rows, int cols,
                                         float eps) {
  int row = blockIdx.x * kRowWarps + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* x_row = x + static_cast<std::size_t>(row) * cols;
  float sum = 0.0f;
  for (int c = lane * V; c < cols; c += 32 * V) {
    RowVec<T, V> v = load_row_vec<T, V>(x_row + c);
#pragma unroll
    for (int k = 0; k < V; ++k) sum += to_f32(v.v[k]);
  }
  float m = warp_sum(sum) / cols;
  float sum_sq = 0.0f;
  for (int c = lane * V; c < cols; c += 32 * V) {
    RowVec<T, V> v = load_row_vec<T, V>(x_row + c);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      float d = to_f32(v.v[k]) - m;
      sum_sq += d * d;
    }
  }
  float s = rsqrtf(warp_sum(sum_sq) / cols + eps);
  T* out_row = out + static_cast<std::size_t>(row) * cols;
  for (int c = lane * V; c < cols; c += 32 * V) {
    RowVec<T, V> v = load_row_vec<T, V>(x_row + c);
    RowVec<T, V> w = load_row_vec<T, V>(weight + c);
    RowVec<T, V> b = load_row_vec<T, V>(bias + c);
    RowVec<T, V> o;
#pragma unroll
    for (int k = 0; k < V; ++k) o.v[k] = from_f32<T>((to_f32(v.v[k]) - m) * s * to_f32(w.v[k]) + to_f32(b.v[k]));
    store_row_vec<T, V>(out_row + c, o);
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

template <class T, int V>
__global__ void layernorm_backward_kernel(T* dx, float* dweight, float* dbias, const T* dout,
                                          const T* x, const T* weight, const float* mean,
                                          const float* rstd, const T* residual, int rows, int cols) {
  extern __shared__ float column_sums[];  // [dweight | dbias], 2 * cols
  for (int c = threadIdx.x; c < 2 * cols; c += blockDim.x) column_sums[c] = 0.0f;
  __syncthreads();
  int lane = threadIdx.x % 32;
  for (int row = blockIdx.x * kRowWarps + threadIdx.x / 32; row < rows; row += gridDim.x * kRowWarps) {
    std::size_t offset = static_cast<std::size_t>(row) * cols;
    float m = mean[row], s = rstd[row];
    float sum_g = 0.0f, sum_g_xhat = 0.0f;
    for (int c = lane * V; c < cols; c += 32 * V) {
      RowVec<T, V> xv = load_row_vec<T, V>(x + offset + c);
      RowVec<T, V> dv = load_row_vec<T, V>(dout + offset + c);
      RowVec<T, V> wv = load_row_vec<T, V>(weight + c);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        float g = to_f32(dv.v[k]) * to_f32(wv.v[k]);
        sum_g += g;
        sum_g_xhat += g * (to_f32(xv.v[k]) - m) * s;
      }
    }
    float mean_g = warp_sum(sum_g) / cols;
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
        float xhat = (to_f32(xv.v[k]) - m) * s;
        o.v[k] = from_f32<T>(s * (d * to_f32(wv.v[k]) - mean_g - xhat * mean_g_xhat) + to_f32(skip.v[k]));
        atomicAdd(&column_sums[c + k], d * xhat);
        atomicAdd(&column_sums[cols + c + k], d);
      }
      store_row_vec<T, V>(dx + offset + c, o);
    }
  }
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    atomicAdd(&dweight[c], column_sums[c]);
    atomicAdd(&dbias[c], column_sums[cols + c]);
  }
}

// Rows of at most CHUNKS * 32 * V columns, V-wide accesses: lane owns columns
// (j * 32 + lane) * V + k for j < CHUNKS. Each warp loops over rows; x, dout and weight stay in
// registers between the two passes over a row. Up to 16 columns per lane fit in 128 registers,
// so two blocks share an SM; wider rows (GPT-2 small's 768 bf16 columns: 24 per lane, ~160
// registers) run one block per SM, since capping them at 128 registers spills.
template <class T, int V, int CHUNKS>
__global__ void __launch_bounds__(kRowWarps * 32, CHUNKS * V <= 16 ? 2 : 1)
layernorm_backward_register_kernel(T* dx, float* dweight, float* dbias, const T* dout, const T* x,
                                   const T* weight, const float* mean, const float* rstd,
                                   const T* residual, int rows, int cols) {
  __shared__ float block_sums[CHUNKS * 32 * V];
  const int lane = threadIdx.x % 32;
  float dweight_sums[CHUNKS][V] = {}, dbias_sums[CHUNKS][V] = {};
  for (int row = blockIdx.x * kRowWarps + threadIdx.x / 32; row < rows; row += gridDim.x * kRowWarps) {
    const std::size_t offset = static_cast<std::size_t>(row) * cols;
    RowVec<T, V> xv[CHUNKS], dv[CHUNKS], wv[CHUNKS];  // weight: reloaded per row from L1
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
      const int c = (j * 32 + lane) * V;
      if (c < cols) {
        xv[j] = load_row_vec<T, V>(x + offset + c);
        dv[j] = load_row_vec<T, V>(dout + offset + c);
        wv[j] = load_row_vec<T, V>(weight + c);
      }
    }
    const float m = mean[row], s = rstd[row];
    float sum_g = 0.0f, sum_g_xhat = 0.0f;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
      if ((j * 32 + lane) * V >= cols) continue;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float g = to_f32(dv[j].v[k]) * to_f32(wv[j].v[k]);
        sum_g += g;
        sum_g_xhat += g * (to_f32(xv[j].v[k]) - m) * s;
      }
    }
    const float mean_g = warp_sum(sum_g) / cols;
    const float mean_g_xhat = warp_sum(sum_g_xhat) / cols;
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
      const int c = (j * 32 + lane) * V;
      if (c >= cols) continue;
      RowVec<T, V> o, skip{};
      if (residual) skip = load_row_vec<T, V>(residual + offset + c);  // read as dx is written
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float d = to_f32(dv[j].v[k]);
        const float xhat = (to_f32(xv[j].v[k]) - m) * s;
        o.v[k] = from_f32<T>(s * (d * to_f32(wv[j].v[k]) - mean_g - xhat * mean_g_xhat) + to_f32(skip.v[k]));
        dweight_sums[j][k] += d * xhat;
        dbias_sums[j][k] += d;
      }
      store_row_vec<T, V>(dx + offset + c, o);
    }
  }
  add_columns_in_warp_order<CHUNKS, V>(block_sums, dweight_sums, cols);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) atomicAdd(&dweight[c], block_sums[c]);
  __syncthreads();  // every thread has read the dweight sums before they are overwritten
  add_columns_in_warp_order<CHUNKS, V>(block_sums, dbias_sums, cols);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) atomicAdd(&dbias[c], block_sums[c]);
}

// kernel launchers

namespace cuda {

void layernorm_forward(Tensor& out, Tensor& mean, Tensor& rstd, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, float eps,
                       memory::StreamHandle stream) {
  int rows = checked_int(rows_of(x), "layernorm_forward rows");
  int cols = checked_int(x.dim(-1), "layernorm_forward C");
  if (rows == 0) return;
  dispatch_float(x.dtype(), "layernorm_forward", [&](auto zero) {
    using T = decltype(zero);
    auto launch = [&](auto width) {
      constexpr int V = decltype(width)::value;
      layernorm_forward_kernel<T, V><<<ceil_div(rows, kRowWarps), kRowWarps * 32, 0,
                                       as_cuda_stream(stream)>>>(
          out.data_as<T>(), mean.data_as<float>(), rstd.data_as<float>(), x.data_as<const T>(),
          weight.data_as<const T>(), bias.data_as<const T>(), rows, cols, eps);
      OOMLAB_CUDA_CHECK_LAUNCH();
    };
    launch_with_row_width<T>(cols, {out.data(), x.data(), weight.data(), bias.data()}, launch);
  });
}

void layernorm_backward(Tensor& dx, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                        const Tensor& x, const Tensor& weight, const Tensor& mean,
                        const Tensor& rstd, const Tensor& residual, memory::StreamHandle stream) {
  int rows = checked_int(rows_of(x), "layernorm_backward rows");
  int cols = checked_int(x.dim(-1), "layernorm_backward C");
  if (rows == 0) return;
  dispatch_float(x.dtype(), "layernorm_backward", [&](auto zero) {
    using T = decltype(zero);
    const T* skip = residual.defined() ? residual.data_as<const T>() : nullptr;
    constexpr int kVec = 16 / sizeof(T);
    constexpr int kMaxChunks = kRegisterColumns / (32 * kVec);
    const int chunks = static_cast<int>(ceil_div(static_cast<std::size_t>(cols), 32 * kVec));
    if (chunks >= 1 && chunks <= kMaxChunks &&
        row_vectorizable<T>(cols, {dx.data(), dout.data(), x.data(), weight.data(), skip})) {
      auto launch = [&](auto chunk_count) {
        constexpr int CHUNKS = decltype(chunk_count)::value;
        auto kernel = layernorm_backward_register_kernel<T, kVec, CHUNKS>;
        static const unsigned resident = resident_blocks(kernel);
        kernel<<<resident_row_grid(resident, rows), kRowWarps * 32, 0, as_cuda_stream(stream)>>>(
            dx.data_as<T>(), dweight.data_as<float>(), dbias.data_as<float>(), dout.data_as<const T>(),
            x.data_as<const T>(), weight.data_as<const T>(), mean.data_as<const float>(),
            rstd.data_as<const float>(), skip, rows, cols);
        OOMLAB_CUDA_CHECK_LAUNCH();
      };
      return dispatch_chunks<kMaxChunks>(chunks, launch);
    }
    std::size_t shared_bytes = 2 * static_cast<std::size_t>(cols) * sizeof(float);
    auto launch = [&](auto width) {
      constexpr int V = decltype(width)::value;
      auto kernel = layernorm_backward_kernel<T, V>;
      allow_shared_bytes(kernel, shared_bytes, "layernorm_backward");
      kernel<<<row_reduction_grid(rows), kRowWarps * 32, shared_bytes, as_cuda_stream(stream)>>>(
          dx.data_as<T>(), dweight.data_as<float>(), dbias.data_as<float>(),
          dout.data_as<const T>(), x.data_as<const T>(), weight.data_as<const T>(),
          mean.data_as<const float>(), rstd.data_as<const float>(), skip, rows, cols);
      OOMLAB_CUDA_CHECK_LAUNCH();
    };
    launch_with_row_width<T>(cols, {dx.data(), dout.data(), x.data(), weight.data(), skip}, launch);
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
