// conv2d as implicit GEMM on CUDA: forward, backward-data and backward-weight.
//
// Each convolution is a GEMM C(M x N) = A(M x Kd) * B(Kd x N) whose operands are never
// materialised: a block gathers its A and B tiles straight from the NHWC/KRSC tensors into
// shared memory (padding and out-of-range taps read as zeros).
//   forward      M = n*p*q (output pixels)  N = k  Kd = r*s*c    A = x taps       B = w
//   backward-data M = n*h*w (input pixels)  N = c  Kd = r*s*k    A = dy taps      B = w
//   backward-weight, computed as dw^T:      M = r*s*c  N = k  Kd = n*p*q   A = x taps  B = dy
// Backward-weight splits Kd into fixed ranges (plan_wgrad), each writing its own f32 partial,
// summed in order afterwards: deterministic, no atomics.
//
// Tiles: 128 x 64 (or 128 x 16 when N <= 16), 256 threads, double-buffered shared memory filled
// with 16-byte cp.async (zero-filled for padding) when the contiguous dim is a multiple of 8 bf16
// / 4 f32 channels, element by element otherwise. bf16 multiplies on tensor cores with wmma
// m16n16k16 (f32 accumulate), k-slices of 32; f32 uses FMA over 8x4 (or 8x1) register tiles,
// k-slices of 16.
#include <mma.h>

#include <type_traits>

#include "kernels/conv/conv2d_launch.hpp"
#include "kernels/core/check.hpp"
#include "kernels/conv/index_map.cuh"
#include "kernels/conv/reduce_kernels.cuh"

namespace oomlab::ops::detail {

namespace {

constexpr int kGemmThreads = 256;

// CUDA kernels

// ---- the three GEMM views of a convolution ----
// Each provides the operand sources a/b, extents M, N, Kd, whether each operand is contiguous
// along Kd (else along M or N), a per-row precomputation (a_row/b_row, fixed across k-tiles),
// the element offset of (row, kk) or -1 for a zero (a_offset/b_offset), and the epilogue.

template <class T>
struct ForwardGemm {
  static constexpr bool kAAlongK = true;  // x taps: channels run along kk
  static constexpr bool kBAlongK = true;  // w[n, kk]
  const T* a;                              // x
  const T* b;                              // w
  const T* bias;                           // may be null
  T* y;
  int M, N, Kd;
  int H, W, C, P, Q, S, stride, pad;

  struct ARow { std::int64_t image; int h0, w0; bool valid; };
  __device__ ARow a_row(int m) const {
    const int q = m % Q, pq = m / Q, p = pq % P, n = pq / P;
    return {static_cast<std::int64_t>(n) * H * W * C, p * stride - pad, q * stride - pad, m < M};
  }
  __device__ std::int64_t a_offset(const ARow& row, int kk) const {
    if (!row.valid || kk >= Kd) return -1;
    const int c = kk % C, rs = kk / C, s = rs % S, r = rs / S;
    const int h = row.h0 + r, w = row.w0 + s;
    if (h < 0 || h >= H || w < 0 || w >= W) return -1;
    return row.image + (static_cast<std::int64_t>(h) * W + w) * C + c;
  }
  struct BRow { std::int64_t start; bool valid; };
  __device__ BRow b_row(int n) const { return {static_cast<std::int64_t>(n) * Kd, n < N}; }
  __device__ std::int64_t b_offset(const BRow& row, int kk) const {
    return row.valid && kk < Kd ? row.start + kk : -1;
  }
  __device__ void epilogue(int m, int n, float value) const {
    if (bias != nullptr) value += to_f32(bias[n]);
    y[static_cast<std::int64_t>(m) * N + n] = from_f32<T>(value);
  }
};

template <class T>
struct BackwardDataGemm {
  static constexpr bool kAAlongK = true;   // dy taps: output channels run along kk
  static constexpr bool kBAlongK = false;  // w[k, r, s, c]: c (= n) is contiguous
  const T* a;                               // dy
  const T* b;                               // w
  T* dx;
  int M, N, Kd;
  int H, W, P, Q, R, S, K, stride, pad;     // N is c

  struct ARow { std::int64_t image; int hp, wp; bool valid; };
  __device__ ARow a_row(int m) const {
    const int w = m % W, nh = m / W, h = nh % H, n = nh / H;
    return {static_cast<std::int64_t>(n) * P * Q * K, h + pad, w + pad, m < M};
  }
  // dy[n, p, q, k] feeds dx[n, h, w, :] through tap (r, s) when p*stride = h + pad - r.
  __device__ std::int64_t a_offset(const ARow& row, int kk) const {
    if (!row.valid || kk >= Kd) return -1;
    const int k = kk % K, rs = kk / K, s = rs % S, r = rs / S;
    const int ph = row.hp - r, pw = row.wp - s;
    if (ph < 0 || pw < 0 || ph % stride != 0 || pw % stride != 0) return -1;
    const int p = ph / stride, q = pw / stride;
    if (p >= P || q >= Q) return -1;
    return row.image + (static_cast<std::int64_t>(p) * Q + q) * K + k;
  }
  struct BRow { int c; bool valid; };
  __device__ BRow b_row(int n) const { return {n, n < N}; }
  __device__ std::int64_t b_offset(const BRow& row, int kk) const {
    if (!row.valid || kk >= Kd) return -1;
    const int k = kk % K, rs = kk / K;
    return (static_cast<std::int64_t>(k) * R * S + rs) * N + row.c;
  }
  __device__ void epilogue(int m, int n, float value) const {
    dx[static_cast<std::int64_t>(m) * N + n] = from_f32<T>(value);
  }
};

template <class T>
struct BackwardWeightGemm {
  static constexpr bool kAAlongK = false;  // x taps: c (part of m) is contiguous
  static constexpr bool kBAlongK = false;  // dy[kk, n]: n is contiguous
  const T* a;                               // x
  const T* b;                               // dy
  float* partials;                          // [split][N][M]: split z's dw in KRSC order
  int M, N, Kd;
  int H, W, C, P, Q, S, stride, pad;

  struct ARow { int r, s, c; bool valid; };
  __device__ ARow a_row(int m) const {
    const int c = m % C, rs = m / C;
    return {rs / S, rs % S, c, m < M};
  }
  __device__ std::int64_t a_offset(const ARow& row, int kk) const {
    if (!row.valid || kk >= Kd) return -1;
    const int q = kk % Q, np = kk / Q, p = np % P, n = np / P;
    const int h = p * stride - pad + row.r, w = q * stride - pad + row.s;
    if (h < 0 || h >= H || w < 0 || w >= W) return -1;
    return ((static_cast<std::int64_t>(n) * H + h) * W + w) * C + row.c;
  }
  struct BRow { int k; bool valid; };
  __device__ BRow b_row(int n) const { return {n, n < N}; }
  __device__ std::int64_t b_offset(const BRow& row, int kk) const {
    return row.valid && kk < Kd ? static_cast<std::int64_t>(kk) * N + row.k : -1;
  }
  __device__ void epilogue(int m, int n, float value) const {
    partials[(static_cast<std::int64_t>(blockIdx.z) * N + n) * M + m] = value;
  }
};

// ---- tile configuration ----

template <class T, int BM_, int BN_, int WarpsM_, int WarpsN_>
struct TileConfig {
  static constexpr int BM = BM_, BN = BN_;
  static constexpr int BK = std::is_same_v<T, float> ? 16 : 32;
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte copy
  static constexpr int kPad = kVec;  // keeps rows 16-byte aligned and shifts banks
  static constexpr int WarpsM = WarpsM_, WarpsN = WarpsN_;
  static_assert(WarpsM * WarpsN * 32 == kGemmThreads, "one warp per warp tile");
};

// ---- cp.async (sm_80+) ----

__device__ __forceinline__ void cp_async_16(void* shared_dst, const void* global_src, bool valid) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));
  const int src_bytes = valid ? 16 : 0;  // 0: no read, the 16 bytes are zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(global_src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all_but_one() {
  asm volatile("cp.async.wait_group 1;\n" ::);
}

// One operand tile (Rows x BK, `Rows` = BM for A, BN for B) in shared memory. AlongK: stored
// [Rows][BK + pad] (kk contiguous); else [BK][Rows + pad] (the row index contiguous).
template <class T, class Cfg, int Rows, bool AlongK>
struct OperandTile {
  static constexpr int kLd = AlongK ? Cfg::BK + Cfg::kPad : Rows + Cfg::kPad;
  static constexpr int kElements = AlongK ? Rows * kLd : Cfg::BK * kLd;
  static_assert(kElements * sizeof(T) % 32 == 0, "each buffer 32-byte aligned for wmma");
  static __device__ __forceinline__ int index(int row, int kk) {
    return AlongK ? row * kLd + kk : kk * kLd + row;
  }
  // Vector v of the tile: its (row, kk) origin; vectors run along the contiguous dim.
  static constexpr int kVectors = Rows * Cfg::BK / Cfg::kVec;
  static constexpr int kVectorIters = (kVectors + kGemmThreads - 1) / kGemmThreads;
  static __device__ __forceinline__ void vector_origin(int v, int& row, int& kk) {
    if (AlongK) {
      row = v / (Cfg::BK / Cfg::kVec);
      kk = v % (Cfg::BK / Cfg::kVec) * Cfg::kVec;
    } else {
      kk = v / (Rows / Cfg::kVec);
      row = v % (Rows / Cfg::kVec) * Cfg::kVec;
    }
  }
};

// Fills one operand tile for k-tile origin k0. Vectorised: each thread's vector origins (and so
// their row precomputations) are fixed for the whole kernel, computed once in the constructor.
template <class T, class Cfg, int Rows, bool AlongK, bool Vectorised, class RowInfo>
struct OperandLoader {
  using Tile = OperandTile<T, Cfg, Rows, AlongK>;
  RowInfo rows[Tile::kVectorIters];

  template <class MakeRow>
  __device__ OperandLoader(int row0, MakeRow make_row) {
    if constexpr (Vectorised) {
#pragma unroll
      for (int i = 0; i < Tile::kVectorIters; ++i) {
        int row = 0, kk = 0;
        Tile::vector_origin(threadIdx.x + i * kGemmThreads, row, kk);
        rows[i] = make_row(row0 + row);
      }
    } else {
      (void)row0;
      (void)make_row;
    }
  }

  template <class MakeRow, class Offset>
  __device__ void load(T* tile, const T* source, int row0, int k0, MakeRow make_row,
                       Offset offset) const {
    if constexpr (Vectorised) {
#pragma unroll
      for (int i = 0; i < Tile::kVectorIters; ++i) {
        const int v = threadIdx.x + i * kGemmThreads;
        if (Tile::kVectors % kGemmThreads != 0 && v >= Tile::kVectors) break;
        int row = 0, kk = 0;
        Tile::vector_origin(v, row, kk);
        const std::int64_t at = offset(rows[i], k0 + kk);
        cp_async_16(tile + Tile::index(row, kk), at >= 0 ? source + at : source, at >= 0);
      }
    } else {
      constexpr int kElements = Rows * Cfg::BK;
      for (int e = threadIdx.x; e < kElements; e += kGemmThreads) {
        // Consecutive threads take consecutive elements of the contiguous dim (coalesced).
        const int row = AlongK ? e / Cfg::BK : e % Rows;
        const int kk = AlongK ? e % Cfg::BK : e / Rows;
        const std::int64_t at = offset(make_row(row0 + row), k0 + kk);
        tile[Tile::index(row, kk)] = at >= 0 ? source[at] : from_f32<T>(0.0f);
      }
    }
  }
};

template <class Gemm, class Cfg, class T, bool VecA, bool VecB>
__global__ void __launch_bounds__(kGemmThreads)
    implicit_gemm_kernel(Gemm gemm, int k_per_split) {
  using ATile = OperandTile<T, Cfg, Cfg::BM, Gemm::kAAlongK>;
  using BTile = OperandTile<T, Cfg, Cfg::BN, Gemm::kBAlongK>;
  __shared__ __align__(128) T a_tiles[2][ATile::kElements];
  __shared__ __align__(128) T b_tiles[2][BTile::kElements];

  const int m0 = blockIdx.x * Cfg::BM;
  const int n0 = blockIdx.y * Cfg::BN;
  const int k_begin = blockIdx.z * k_per_split;
  const int k_end = min(k_begin + k_per_split, gemm.Kd);
  const int k_tiles = k_end > k_begin ? (k_end - k_begin + Cfg::BK - 1) / Cfg::BK : 0;

  auto a_row = [&](int m) { return gemm.a_row(m); };
  auto b_row = [&](int n) { return gemm.b_row(n); };
  auto a_offset = [&](const typename Gemm::ARow& row, int kk) { return gemm.a_offset(row, kk); };
  auto b_offset = [&](const typename Gemm::BRow& row, int kk) { return gemm.b_offset(row, kk); };
  const OperandLoader<T, Cfg, Cfg::BM, Gemm::kAAlongK, VecA, typename Gemm::ARow> a_loader(m0, a_row);
  const OperandLoader<T, Cfg, Cfg::BN, Gemm::kBAlongK, VecB, typename Gemm::BRow> b_loader(n0, b_row);
  auto load_stage = [&](int stage, int k0) {
    a_loader.load(a_tiles[stage], gemm.a, m0, k0, a_row, a_offset);
    b_loader.load(b_tiles[stage], gemm.b, n0, k0, b_row, b_offset);
  };

  if constexpr (std::is_same_v<T, float>) {
    // ---- f32: FMA over per-thread register tiles; thread (ty, tx) owns rows ty + 16i and
    // columns tx + 16j of the block tile.
    constexpr int TM = Cfg::BM / 16, TN = Cfg::BN / 16;
    const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
    float acc[TM][TN] = {};
    if (k_tiles > 0) load_stage(0, k_begin);
    cp_async_commit();
    for (int t = 0; t < k_tiles; ++t) {
      if (t + 1 < k_tiles) load_stage((t + 1) & 1, k_begin + (t + 1) * Cfg::BK);
      cp_async_commit();
      cp_async_wait_all_but_one();
      __syncthreads();  // tile t is complete for every thread
      const float* as = a_tiles[t & 1];
      const float* bs = b_tiles[t & 1];
#pragma unroll 4
      for (int kk = 0; kk < Cfg::BK; ++kk) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = as[ATile::index(ty + 16 * i, kk)];
#pragma unroll
        for (int j = 0; j < TN; ++j) b[j] = bs[BTile::index(tx + 16 * j, kk)];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
      __syncthreads();  // everyone is done reading buffer t & 1 before it is refilled
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
        if (m < gemm.M && n < gemm.N) gemm.epilogue(m, n, acc[i][j]);
      }
  } else {
    // ---- bf16 / f16: tensor cores through wmma; each warp owns a (BM/WarpsM) x (BN/WarpsN) tile.
    using namespace nvcuda;
    constexpr int WTM = Cfg::BM / Cfg::WarpsM, WTN = Cfg::BN / Cfg::WarpsN;
    constexpr int FM = WTM / 16, FN = WTN / 16;
    using ALayout = std::conditional_t<Gemm::kAAlongK, wmma::row_major, wmma::col_major>;
    using BLayout = std::conditional_t<Gemm::kBAlongK, wmma::col_major, wmma::row_major>;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_m = warp / Cfg::WarpsN, warp_n = warp % Cfg::WarpsN;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    if (k_tiles > 0) load_stage(0, k_begin);
    cp_async_commit();
    for (int t = 0; t < k_tiles; ++t) {
      if (t + 1 < k_tiles) load_stage((t + 1) & 1, k_begin + (t + 1) * Cfg::BK);
      cp_async_commit();
      cp_async_wait_all_but_one();
      __syncthreads();  // tile t is complete for every thread
      const T* as = a_tiles[t & 1];
      const T* bs = b_tiles[t & 1];
#pragma unroll
      for (int kk = 0; kk < Cfg::BK; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, ALayout> a[FM];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, BLayout> b[FN];
#pragma unroll
        for (int i = 0; i < FM; ++i)
          wmma::load_matrix_sync(a[i], as + ATile::index(warp_m * WTM + i * 16, kk), ATile::kLd);
#pragma unroll
        for (int j = 0; j < FN; ++j)
          wmma::load_matrix_sync(b[j], bs + BTile::index(warp_n * WTN + j * 16, kk), BTile::kLd);
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
          for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
      }
      __syncthreads();  // everyone is done reading buffer t & 1 before it is refilled
    }

    // Epilogue: each warp stages one 16x16 accumulator at a time in its own shared slot, then
    // its lanes apply the epilogue element by element with bounds checks.
    __shared__ __align__(128) float staging[kGemmThreads / 32][16 * 16];
    float* mine = staging[warp];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j) {
        wmma::store_matrix_sync(mine, acc[i][j], 16, wmma::mem_row_major);
        __syncwarp();
        for (int e = lane; e < 256; e += 32) {
          const int m = m0 + warp_m * WTM + i * 16 + e / 16;
          const int n = n0 + warp_n * WTN + j * 16 + e % 16;
          if (m < gemm.M && n < gemm.N) gemm.epilogue(m, n, mine[e]);
        }
        __syncwarp();  // reads done before the next fragment overwrites the slot
      }
  }
}

// dw[i] = sum over splits of partials[split][i], in split order (then rounded to T).
template <class T>
struct SumSplits {
  const float* partials;
  std::int64_t splits, count;
  T* dw;
  __device__ void operator()(std::int64_t i) const {
    float total = 0.0f;
    for (std::int64_t z = 0; z < splits; ++z) total += partials[z * count + i];
    dw[i] = from_f32<T>(total);
  }
};

// kernel launchers

template <class Gemm, class Cfg, class T>
void launch_gemm_config(const Gemm& gemm, bool vec_a, bool vec_b, int k_per_split, int splits,
                        cudaStream_t stream) {
  const dim3 grid(ceil_div(gemm.M, Cfg::BM), ceil_div(gemm.N, Cfg::BN), static_cast<unsigned>(splits));
  OOMLAB_CHECK(grid.y <= 65535 && grid.z <= 65535, "conv2d: grid too large for N " << gemm.N);
  if (vec_a && vec_b) {
    implicit_gemm_kernel<Gemm, Cfg, T, true, true><<<grid, kGemmThreads, 0, stream>>>(gemm, k_per_split);
  } else if (vec_a) {
    implicit_gemm_kernel<Gemm, Cfg, T, true, false><<<grid, kGemmThreads, 0, stream>>>(gemm, k_per_split);
  } else if (vec_b) {
    implicit_gemm_kernel<Gemm, Cfg, T, false, true><<<grid, kGemmThreads, 0, stream>>>(gemm, k_per_split);
  } else {
    implicit_gemm_kernel<Gemm, Cfg, T, false, false><<<grid, kGemmThreads, 0, stream>>>(gemm, k_per_split);
  }
  OOMLAB_CUDA_CHECK_LAUNCH();
}

// Narrow outputs (N <= 16, e.g. the 64 -> 3 RGB conv) use 128 x 16 tiles so the MMA work is not
// mostly padding; everything else 128 x 64.
template <class Gemm, class T>
void launch_gemm(const Gemm& gemm, bool vec_a, bool vec_b, int k_per_split, int splits,
                 cudaStream_t stream) {
  if (gemm.N <= 16) {
    launch_gemm_config<Gemm, TileConfig<T, 128, 16, 8, 1>, T>(gemm, vec_a, vec_b, k_per_split, splits, stream);
  } else {
    launch_gemm_config<Gemm, TileConfig<T, 128, 64, 4, 2>, T>(gemm, vec_a, vec_b, k_per_split, splits, stream);
  }
}

// 16-byte copies need the run to be whole vectors and the base 16-byte aligned.
bool vectorisable(const void* base, std::int64_t run, std::size_t element_bytes) {
  const std::int64_t vec = static_cast<std::int64_t>(16 / element_bytes);
  return run % vec == 0 && reinterpret_cast<std::uintptr_t>(base) % 16 == 0;
}

int as_int(std::int64_t value) { return static_cast<int>(value); }  // extents checked on the host

}  // namespace

void conv2d_forward_cuda(DType dtype, const Conv2dGeometry& g, const void* x, const void* w,
                         const void* bias, void* y, memory::StreamHandle stream) {
  dispatch_float(dtype, "conv2d_forward", [&](auto zero) {
    using T = decltype(zero);
    ForwardGemm<T> gemm{static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
                        static_cast<T*>(y), as_int(g.n * g.p * g.q), as_int(g.k),
                        as_int(g.r * g.s * g.c), as_int(g.h), as_int(g.w), as_int(g.c),
                        as_int(g.p), as_int(g.q), as_int(g.s), g.stride, g.pad};
    launch_gemm<ForwardGemm<T>, T>(gemm, vectorisable(x, g.c, sizeof(T)),
                                   vectorisable(w, g.r * g.s * g.c, sizeof(T)), gemm.Kd, 1,
                                   as_cuda_stream(stream));
  });
}

void conv2d_backward_data_cuda(DType dtype, const Conv2dGeometry& g, const void* dy, const void* w,
                               void* dx, memory::StreamHandle stream) {
  dispatch_float(dtype, "conv2d_backward_data", [&](auto zero) {
    using T = decltype(zero);
    BackwardDataGemm<T> gemm{static_cast<const T*>(dy), static_cast<const T*>(w), static_cast<T*>(dx),
                             as_int(g.n * g.h * g.w), as_int(g.c), as_int(g.r * g.s * g.k),
                             as_int(g.h), as_int(g.w), as_int(g.p), as_int(g.q), as_int(g.r),
                             as_int(g.s), as_int(g.k), g.stride, g.pad};
    launch_gemm<BackwardDataGemm<T>, T>(gemm, vectorisable(dy, g.k, sizeof(T)),
                                        vectorisable(w, g.c, sizeof(T)), gemm.Kd, 1,
                                        as_cuda_stream(stream));
  });
}

void conv2d_backward_weight_cuda(DType dtype, const Conv2dGeometry& g, const void* x, const void* dy,
                                 void* dw, void* dbias, float* workspace,
                                 memory::StreamHandle stream) {
  const WgradPlan plan = plan_wgrad(g, dbias != nullptr);
  OOMLAB_CHECK(plan.rows_per_split % 32 == 0 && plan.splits <= 65535,
               "conv2d_backward_weight: bad split plan " << plan.splits << " x " << plan.rows_per_split);
  dispatch_float(dtype, "conv2d_backward_weight", [&](auto zero) {
    using T = decltype(zero);
    const cudaStream_t cuda_stream = as_cuda_stream(stream);
    BackwardWeightGemm<T> gemm{static_cast<const T*>(x), static_cast<const T*>(dy), workspace,
                               as_int(g.r * g.s * g.c), as_int(g.k), as_int(g.n * g.p * g.q),
                               as_int(g.h), as_int(g.w), as_int(g.c), as_int(g.p), as_int(g.q),
                               as_int(g.s), g.stride, g.pad};
    launch_gemm<BackwardWeightGemm<T>, T>(gemm, vectorisable(x, g.c, sizeof(T)),
                                          vectorisable(dy, g.k, sizeof(T)),
                                          as_int(plan.rows_per_split), as_int(plan.splits), cuda_stream);
    const std::int64_t weights = g.k * g.r * g.s * g.c;
    launch_index_map(SumSplits<T>{workspace, plan.splits, weights, static_cast<T*>(dw)}, weights, cuda_stream);
    if (dbias != nullptr) {
      launch_channel_sum(static_cast<const T*>(dy), g.n * g.p * g.q, g.k, 1.0f,
                         workspace + plan.weight_partial_floats, static_cast<T*>(dbias), cuda_stream);
    }
  });
}

}  // namespace oomlab::ops::detail
