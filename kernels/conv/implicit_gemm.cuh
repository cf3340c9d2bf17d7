// The implicit-GEMM engine behind conv2d (conv2d.cu supplies the three GEMM views).
//
// C(M x N) = A(M x Kd) * B(Kd x N), operands gathered from the tensors by a view:
//   view.a_row(m) / view.b_row(n)        per-row precomputation, fixed for the whole kernel
//   view.a_k(kk) / view.b_k(kk)          per-reduction-index decode (tap, channel or pixel)
//   view.a_gather(row, k), b_gather      a Gather: element offset, and whether it exists (else a
//                                        zero: padding, tails; the offset is then not read)
//   view.out_index(m, n), out_value      where C goes and what is stored (bias, rounding)
//   view.epilogue                        element-wise work on the rounded value at the store
//                                        (an OutputEpilogue, conv_epilogue.cuh)
//   kAAlongK / kBAlongK / kOutAlongM     which dim of each operand / of C is contiguous
// Each thread's copy slots are fixed for the whole kernel, so per k-tile a thread decodes only
// the reduction index its 16-byte copies share (FastDivmod) and adds it to rows it precomputed.
//
// Pipeline: Stages-deep ring of shared-memory tiles filled by 16-byte cp.async (zero-filled for
// padding), one __syncthreads per k-tile; element-by-element copies when the contiguous extent
// is not a multiple of 16 bytes. Rows are padded by 16 bytes (32 when needed) so each ldmatrix
// phase touches 8 distinct 16-byte bank groups (conflict-free).
// Compute on tensor cores, one warp per (BM/WarpsM x BN/WarpsN) tile, f32 accumulation:
// bf16/f16 by ldmatrix + mma.sync m16n8k16; f32 by TF32 mma.sync m16n8k8 (cuDNN's and PyTorch's
// default for f32 convolutions; the operands' low 13 bits ignored, as Hopper's wgmma does), its
// fragments by ldmatrix from [row][k] tiles and by permuted-row vector loads from [k][row] tiles
// (see mma_k_tile).
// Epilogue: accumulators -> out_value -> Out in a shared tile, then view.epilogue and 16-byte
// stores along the output's contiguous dim.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "harness/memory/cuda_check.hpp"
#include "kernels/core/check.hpp"
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/device_image.cuh"
#include "kernels/core/engines.hpp"
#include "kernels/core/launch.cuh"
#include "kernels/core/mma_sm80.cuh"

namespace oomlab::ops::detail {

template <class T, int BM_, int BN_, int WarpsM_, int WarpsN_, int Stages_>
struct GemmConfig {
  static constexpr bool kTf32 = std::is_same_v<T, float>;  // else 16-bit operands
  static constexpr int BM = BM_, BN = BN_, WarpsM = WarpsM_, WarpsN = WarpsN_, Stages = Stages_;
  static constexpr int BK = 32;
  static constexpr int kThreads = WarpsM * WarpsN * 32;
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte copy
  static_assert(BM % (16 * WarpsM) == 0 && BN % (8 * WarpsN) == 0, "warp tiles");
  static_assert(Stages >= 2, "at least double buffering");
};

// Padding (elements) that makes a row of `chunks` 16-byte chunks an odd number of chunks long:
// 8 consecutive rows then start in 8 different bank groups (ldmatrix's 8 row reads).
constexpr int odd_chunk_pad(int chunks, int vec) { return chunks % 2 == 0 ? vec : 2 * vec; }

// TF32 fragments of a [k][row] tile: lane (g, t) reads 1, 2 or 4 adjacent words of row k0 + t at
// word g * width (see FragmentRows), so a row length of 8 or 24 words (mod 32) puts each phase of
// the warp's loads (32, 16 or 8 lanes) in distinct banks.
constexpr int tf32_transposed_pad(int rows) {
  int pad = 4;
  while ((rows + pad) % 32 != 8 && (rows + pad) % 32 != 24) pad += 4;
  return pad;
}

// One operand tile (Rows x BK) in shared memory. AlongK: [Rows][BK + pad] (kk contiguous);
// else [BK][Rows + pad] (the row index contiguous).
template <class Cfg, int Rows, bool AlongK>
struct OperandTile {
  static constexpr int kContiguous = AlongK ? Cfg::BK : Rows;
  // [row][k] tiles of 32 f32 (36 with the pad) are conflict-free for TF32 fragments as they are.
  static constexpr int kLd = kContiguous + (Cfg::kTf32 && !AlongK ? tf32_transposed_pad(Rows)
                                                                  : odd_chunk_pad(kContiguous / Cfg::kVec, Cfg::kVec));
  static constexpr int kElements = (AlongK ? Rows : Cfg::BK) * kLd;
  static_assert(kContiguous % Cfg::kVec == 0, "whole 16-byte chunks per row");
  static __device__ __forceinline__ int index(int row, int kk) {
    return AlongK ? row * kLd + kk : kk * kLd + row;
  }
};

// Where an operand element comes from: its offset in the tensor, or nothing (a zero).
struct Gather {
  std::int64_t offset;
  bool valid;
};

// The A or B side of a view, so one loader serves both.
template <class View>
struct ASide {
  static constexpr bool kAlongK = View::kAAlongK;
  using Row = typename View::ARow;
  using K = typename View::AK;
  static __device__ __forceinline__ Row row(const View& v, int m) { return v.a_row(m); }
  static __device__ __forceinline__ K k(const View& v, int kk) { return v.a_k(kk); }
  static __device__ __forceinline__ Gather gather(const View& v, const Row& r, const K& k) {
    return v.a_gather(r, k);
  }
  static __device__ __forceinline__ const typename View::Elem* source(const View& v) { return v.a; }
};
template <class View>
struct BSide {
  static constexpr bool kAlongK = View::kBAlongK;
  using Row = typename View::BRow;
  using K = typename View::BK;
  static __device__ __forceinline__ Row row(const View& v, int n) { return v.b_row(n); }
  static __device__ __forceinline__ K k(const View& v, int kk) { return v.b_k(kk); }
  static __device__ __forceinline__ Gather gather(const View& v, const Row& r, const K& k) {
    return v.b_gather(r, k);
  }
  static __device__ __forceinline__ const typename View::Elem* source(const View& v) { return v.b; }
};

// Fills one operand tile for the k-tile starting at k0. Vectorised: each thread's copies share
// one reduction index, decoded once per k-tile, and have rows fixed for the whole kernel
// (precomputed once). [row][k] tiles: a thread's 16-byte chunk of k is fixed, its rows strided;
// [k][row] tiles: kLineThreads threads share a k line, each taking every kLineThreads-th chunk of
// rows. Element copies decode per copy.
template <class View, class Side, class Cfg, int Rows, bool Vectorised,
          class Tile = OperandTile<Cfg, Rows, Side::kAlongK>>
struct OperandLoader {
  using T = typename View::Elem;
  static constexpr bool kAlongK = Side::kAlongK;
  static constexpr int kVecPerLine = Tile::kContiguous / Cfg::kVec;  // 16-byte copies per smem row
  static constexpr int kVectors = Rows * Cfg::BK / Cfg::kVec;
  static constexpr int kLineThreads = std::min(Cfg::kThreads / Cfg::BK, kVecPerLine);  // [k][row] tiles
  static constexpr int kIters = kAlongK ? (kVectors + Cfg::kThreads - 1) / Cfg::kThreads : kVecPerLine / kLineThreads;
  static_assert(!kAlongK || Cfg::kThreads % kVecPerLine == 0 || kVectors <= Cfg::kThreads,
                "a thread's chunk of k is fixed");
  static_assert(kAlongK || kVecPerLine % kLineThreads == 0, "a k line's chunks split evenly");
  static_assert(Cfg::kThreads % Cfg::BK == 0, "element copies: one reduction column per thread");

  // Element copies of a [k][row] tile keep one row per thread when the block covers whole
  // columns of rows: decoded once (the narrow-channel wgrad's x taps, the 64 -> 3 conv's dy).
  static constexpr bool kFixedElementRow = !Vectorised && !kAlongK && Cfg::kThreads % Rows == 0;

  typename Side::Row rows[Vectorised ? kIters : 1];

  // The row (within the tile) of a [k][row] thread's i-th chunk.
  static __device__ __forceinline__ int line_row(int i) {
    return (threadIdx.x % kLineThreads + i * kLineThreads) * Cfg::kVec;
  }

  __device__ OperandLoader(const View& view, int row0) {
    if constexpr (kFixedElementRow) {
      rows[0] = Side::row(view, row0 + threadIdx.x % Rows);
    } else if constexpr (Vectorised) {
#pragma unroll
      for (int i = 0; i < kIters; ++i) {
        rows[i] = Side::row(view, row0 + (kAlongK ? (threadIdx.x + i * Cfg::kThreads) / kVecPerLine : line_row(i)));
      }
    }
  }

  __device__ __forceinline__ void load(const View& view, T* tile, int row0, int k0) const {
    const T* source = Side::source(view);
    if constexpr (Vectorised) {
      if constexpr (kAlongK) {
        const int kk = threadIdx.x % kVecPerLine * Cfg::kVec;
        const typename Side::K k = Side::k(view, k0 + kk);
#pragma unroll
        for (int i = 0; i < kIters; ++i) {
          const int v = threadIdx.x + i * Cfg::kThreads;
          if (kVectors % Cfg::kThreads != 0 && v >= kVectors) break;
          const Gather from = Side::gather(view, rows[i], k);
          cp_async_16(tile + Tile::index(v / kVecPerLine, kk), source + from.offset, from.valid);
        }
      } else {
        if (Cfg::BK * kLineThreads < Cfg::kThreads && threadIdx.x >= Cfg::BK * kLineThreads) return;
        const int kk = threadIdx.x / kLineThreads;
        const typename Side::K k = Side::k(view, k0 + kk);
#pragma unroll
        for (int i = 0; i < kIters; ++i) {
          const Gather from = Side::gather(view, rows[i], k);
          cp_async_16(tile + Tile::index(line_row(i), kk), source + from.offset, from.valid);
        }
      }
    } else if constexpr (kAlongK) {
      // One reduction column per thread, rows strided; consecutive threads read consecutive kk.
      const int kk = threadIdx.x % Cfg::BK;
      const typename Side::K k = Side::k(view, k0 + kk);
      for (int row = threadIdx.x / Cfg::BK; row < Rows; row += Cfg::kThreads / Cfg::BK) {
        const Gather from = Side::gather(view, Side::row(view, row0 + row), k);
        tile[Tile::index(row, kk)] = from.valid ? source[from.offset] : from_f32<T>(0.0f);
      }
    } else if constexpr (kFixedElementRow) {
      const int row = threadIdx.x % Rows;
      for (int kk = threadIdx.x / Rows; kk < Cfg::BK; kk += Cfg::kThreads / Rows) {
        const Gather from = Side::gather(view, rows[0], Side::k(view, k0 + kk));
        tile[Tile::index(row, kk)] = from.valid ? source[from.offset] : from_f32<T>(0.0f);
      }
    } else {
      for (int e = threadIdx.x; e < Rows * Cfg::BK; e += Cfg::kThreads) {
        const int row = e % Rows, kk = e / Rows;  // consecutive threads: consecutive rows
        const Gather from = Side::gather(view, Side::row(view, row0 + row), Side::k(view, k0 + kk));
        tile[Tile::index(row, kk)] = from.valid ? source[from.offset] : from_f32<T>(0.0f);
      }
    }
  }
};

// The staged output tile: [BM][BN + pad] when C is contiguous along n, [BN][BM + pad] along m.
template <class View, class Cfg>
struct OutputTile {
  using Out = typename View::Out;
  static constexpr int kVec = 16 / static_cast<int>(sizeof(Out));
  static constexpr int kContiguous = View::kOutAlongM ? Cfg::BM : Cfg::BN;
  static constexpr int kOther = View::kOutAlongM ? Cfg::BN : Cfg::BM;
  static constexpr int kLd = kContiguous + (kContiguous % kVec == 0 ? odd_chunk_pad(kContiguous / kVec, kVec) : 1);
  static constexpr int kElements = kOther * kLd;
  static __device__ __forceinline__ int index(int m, int n) {
    return View::kOutAlongM ? n * kLd + m : m * kLd + n;
  }
};

template <class View, class Cfg>
constexpr std::size_t gemm_shared_bytes() {
  using T = typename View::Elem;
  constexpr std::size_t stage = (OperandTile<Cfg, Cfg::BM, View::kAAlongK>::kElements +
                                 OperandTile<Cfg, Cfg::BN, View::kBAlongK>::kElements) * sizeof(T);
  constexpr std::size_t output = OutputTile<View, Cfg>::kElements * sizeof(typename View::Out);
  return std::max(stage * Cfg::Stages, output);
}

// A lane's words of a [k][row] f32 tile: N adjacent rows at one k in one shared load (N <= 4).
template <int N>
__device__ __forceinline__ void load_words(unsigned (&out)[N], const float* at) {
  static_assert(N == 1 || N == 2 || N == 4, "one 4-, 8- or 16-byte load");
  if constexpr (N == 4) {
    const uint4 v = *reinterpret_cast<const uint4*>(at);
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
  } else if constexpr (N == 2) {
    const uint2 v = *reinterpret_cast<const uint2*>(at);
    out[0] = v.x, out[1] = v.y;
  } else {
    out[0] = __float_as_uint(*at);
  }
}

// Where row r of a warp's mma tile `tile` (16 rows of A, 8 columns of B) sits in the block tile.
// TF32 fragments of a [k][row] tile cannot come from ldmatrix (it transposes 16-bit elements
// only), so there the warp's rows are permuted: row r of tile i is tile row r * Tiles + i, and
// the Tiles rows a lane needs at one k are adjacent: one shared load. The epilogue uses the same
// map to put each result where its row came from.
template <class Cfg, bool AlongK, int Tiles, int TileRows>
struct FragmentRows {
  static constexpr bool kPermuted = Cfg::kTf32 && !AlongK;
  static __device__ __forceinline__ int row(int warp0, int tile, int r) {
    return kPermuted ? warp0 + r * Tiles + tile : warp0 + tile * TileRows + r;
  }
};

// The k-tile's products into the warp's mma accumulators. 16-bit operands: ldmatrix (transposed
// for [k][row] tiles) + m16n8k16. f32 operands on TF32 tensor cores (m16n8k8): ldmatrix for
// [row][k] tiles (an 8x8 16-bit matrix is 8 rows x 4 words: the TF32 fragment's layout), and
// permuted-row vector loads for [k][row] tiles. The operands' low 13 bits are not rounded away
// first: the tensor cores ignore them, as Hopper's wgmma does for cuDNN's and cuBLAS's TF32.
template <class View, class Cfg>
__device__ __forceinline__ void mma_k_tile(const typename View::Elem* as, const typename View::Elem* bs,
                                           float (&acc)[Cfg::BM / Cfg::WarpsM / 16][Cfg::BN / Cfg::WarpsN / 8][4],
                                           int warp_m0, int warp_n0, int lane) {
  using T = typename View::Elem;
  using ATile = OperandTile<Cfg, Cfg::BM, View::kAAlongK>;
  using BTile = OperandTile<Cfg, Cfg::BN, View::kBAlongK>;
  constexpr int FM = Cfg::BM / Cfg::WarpsM / 16, FN = Cfg::BN / Cfg::WarpsN / 8;
  constexpr int kStep = Cfg::kTf32 ? 8 : 16;  // the mma's k
  constexpr int kHalf = kStep / 2;            // k offset of an 8x8 16-bit matrix's second half
  using RowsOfA = FragmentRows<Cfg, View::kAAlongK, FM, 16>;
  using ColumnsOfB = FragmentRows<Cfg, View::kBAlongK, FN, 8>;
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int ks = 0; ks < Cfg::BK; ks += kStep) {
    unsigned a[FM][4], b[FN][2];
    if constexpr (View::kAAlongK) {  // [m][k]: blocks (m, k), (m+8, k), (m, k+h), (m+8, k+h)
#pragma unroll
      for (int i = 0; i < FM; ++i) {
        ldmatrix_x4(a[i], as + ATile::index(warp_m0 + i * 16 + lane % 16, ks + lane / 16 * kHalf), false);
      }
    } else if constexpr (Cfg::kTf32) {  // a[i][2h + e] = (row g + 8e, k t + 4h) of every m-tile i
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          unsigned words[FM];
          load_words<FM>(words, as + ATile::index(RowsOfA::row(warp_m0, 0, g + 8 * e), ks + t + 4 * h));
#pragma unroll
          for (int i = 0; i < FM; ++i) a[i][2 * h + e] = words[i];
        }
    } else {  // [k][m], transposed blocks in the same order
#pragma unroll
      for (int i = 0; i < FM; ++i) {
        ldmatrix_x4(a[i], as + ATile::index(warp_m0 + i * 16 + lane / 8 % 2 * 8, ks + lane / 16 * 8 + lane % 8), true);
      }
    }
    if constexpr (Cfg::kTf32 && !View::kBAlongK) {  // b[j][h] = (k t + 4h, column g) of every n-tile j
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        unsigned words[FN];
        load_words<FN>(words, bs + BTile::index(ColumnsOfB::row(warp_n0, 0, g), ks + t + 4 * h));
#pragma unroll
        for (int j = 0; j < FN; ++j) b[j][h] = words[j];
      }
    } else {
#pragma unroll
      for (int j = 0; j + 1 < FN; j += 2) {  // n-tiles j and j+1 with one x4
        const int n = warp_n0 + j * 8;
        unsigned r[4];
        if constexpr (View::kBAlongK) {  // [n][k]: blocks (n, k), (n, k+h), (n+8, k), (n+8, k+h)
          ldmatrix_x4(r, bs + BTile::index(n + lane / 16 * 8 + lane % 8, ks + lane / 8 % 2 * kHalf), false);
        } else {  // [k][n]: transposed blocks (k, n), (k+8, n), (k, n+8), (k+8, n+8)
          ldmatrix_x4(r, bs + BTile::index(n + lane / 16 * 8, ks + lane / 8 % 2 * 8 + lane % 8), true);
        }
        b[j][0] = r[0]; b[j][1] = r[1]; b[j + 1][0] = r[2]; b[j + 1][1] = r[3];
      }
      if constexpr (FN % 2 == 1) {
        const int n = warp_n0 + (FN - 1) * 8, l = lane % 16;
        if constexpr (View::kBAlongK) {
          ldmatrix_x2(b[FN - 1], bs + BTile::index(n + l % 8, ks + l / 8 * kHalf), false);
        } else {
          ldmatrix_x2(b[FN - 1], bs + BTile::index(n, ks + l / 8 * 8 + l % 8), true);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j) {
        if constexpr (Cfg::kTf32) {
          mma_1688_tf32(acc[i][j], a[i], b[j]);
        } else {
          mma_16816<T>(acc[i][j], a[i], b[j]);
        }
      }
  }
}

// Epilogue, step 1: accumulator value of C(m0 + m_local, n0 + n_local) -> the staged output tile
// (through the view's out_value: bias, rounding; zero outside C).
template <class View, class Cfg>
__device__ __forceinline__ void stage_output(const View& view, typename View::Out* c_tile, int m0, int n0,
                                             int m_local, int n_local, float value) {
  using Out = typename View::Out;
  const int m = m0 + m_local, n = n0 + n_local;
  c_tile[OutputTile<View, Cfg>::index(m_local, n_local)] =
      m < view.M && n < view.N ? from_f32<Out>(view.out_value(m, n, value)) : from_f32<Out>(0.0f);
}

// Epilogue, step 2 (after a barrier): the staged tile -> C through the view's element-wise
// epilogue (conv_epilogue.cuh), 16-byte stores along C's contiguous dim where whole vectors fit,
// element stores otherwise.
template <class View, class Cfg>
__device__ __forceinline__ void write_output_tile(const View& view, const typename View::Out* c_tile, int m0, int n0) {
  using Out = typename View::Out;
  using CTile = OutputTile<View, Cfg>;
  constexpr int kVecPerLine = (CTile::kContiguous + CTile::kVec - 1) / CTile::kVec;
  const int contiguous0 = View::kOutAlongM ? m0 : n0, other0 = View::kOutAlongM ? n0 : m0;
  const int contiguous_extent = View::kOutAlongM ? view.M : view.N;
  const int other_extent = View::kOutAlongM ? view.N : view.M;
  for (int v = threadIdx.x; v < CTile::kOther * kVecPerLine; v += Cfg::kThreads) {
    const int other = v / kVecPerLine, along = v % kVecPerLine * CTile::kVec;
    if (other0 + other >= other_extent) continue;
    const int m_local = View::kOutAlongM ? along : other, n_local = View::kOutAlongM ? other : along;
    const std::int64_t at = view.out_index(m0 + m_local, n0 + n_local);
    const Out* staged = c_tile + CTile::index(m_local, n_local);
    if (view.vector_out && contiguous0 + along + CTile::kVec <= contiguous_extent &&
        along + CTile::kVec <= CTile::kContiguous) {
      Pack128<Out> pack = *reinterpret_cast<const Pack128<Out>*>(staged);
      view.epilogue.apply(pack, at);
      store128(view.out + at, pack);
    } else {
      for (int e = 0; e < CTile::kVec && along + e < CTile::kContiguous && contiguous0 + along + e < contiguous_extent;
           ++e) {
        Out value = staged[e];
        view.epilogue.apply(value, at + e);
        view.out[at + e] = value;
      }
    }
  }
}

// One block computes C[m0 .. m0+BM) x [n0 .. n0+BN) over the reduction range of split
// blockIdx.z ([z * k_per_split, ...), a multiple of BK long).
template <class View, class Cfg, bool VecA, bool VecB>
__global__ void __launch_bounds__(Cfg::kThreads) implicit_gemm_kernel(View view, int k_per_split) {
#if OOMLAB_IMAGE_SM80
  using T = typename View::Elem;
  using ATile = OperandTile<Cfg, Cfg::BM, View::kAAlongK>;
  using BTile = OperandTile<Cfg, Cfg::BN, View::kBAlongK>;
  constexpr int kStageElements = ATile::kElements + BTile::kElements;
  extern __shared__ __align__(128) unsigned char shared_bytes[];
  T* stages = reinterpret_cast<T*>(shared_bytes);

  const int m0 = blockIdx.x * Cfg::BM;
  const int n0 = blockIdx.y * Cfg::BN;
  const int k_begin = blockIdx.z * k_per_split;
  const int k_end = min(k_begin + k_per_split, view.Kd);
  const int k_tiles = k_end > k_begin ? (k_end - k_begin + Cfg::BK - 1) / Cfg::BK : 0;

  const OperandLoader<View, ASide<View>, Cfg, Cfg::BM, VecA> a_loader(view, m0);
  const OperandLoader<View, BSide<View>, Cfg, Cfg::BN, VecB> b_loader(view, n0);
  auto load_stage = [&](int t) {
    T* stage = stages + (t % Cfg::Stages) * kStageElements;
    a_loader.load(view, stage, m0, k_begin + t * Cfg::BK);
    b_loader.load(view, stage + ATile::kElements, n0, k_begin + t * Cfg::BK);
  };
  // The ring: tile t lives in stage t % Stages; Stages - 1 tiles are in flight ahead of the math.
  auto for_each_k_tile = [&](auto&& compute) {
#pragma unroll
    for (int s = 0; s < Cfg::Stages - 1; ++s) {
      if (s < k_tiles) load_stage(s);
      cp_async_commit();
    }
    for (int t = 0; t < k_tiles; ++t) {
      cp_async_wait<Cfg::Stages - 2>();
      __syncthreads();  // tile t is complete, and every thread is done with tile t - 1's stage
      if (t + Cfg::Stages - 1 < k_tiles) load_stage(t + Cfg::Stages - 1);  // into t - 1's stage
      cp_async_commit();
      const T* stage = stages + (t % Cfg::Stages) * kStageElements;
      compute(stage, stage + ATile::kElements);
    }
    cp_async_wait<0>();
    __syncthreads();  // the stages are free for the output tile
  };

  constexpr int FM = Cfg::BM / Cfg::WarpsM / 16, FN = Cfg::BN / Cfg::WarpsN / 8;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_m0 = warp / Cfg::WarpsN * (Cfg::BM / Cfg::WarpsM);
  const int warp_n0 = warp % Cfg::WarpsN * (Cfg::BN / Cfg::WarpsN);
  float acc[FM][FN][4];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
  for_each_k_tile([&](const T* as, const T* bs) { mma_k_tile<View, Cfg>(as, bs, acc, warp_m0, warp_n0, lane); });
  typename View::Out* c_tile = reinterpret_cast<typename View::Out*>(shared_bytes);
  using RowsOfA = FragmentRows<Cfg, View::kAAlongK, FM, 16>;
  using ColumnsOfB = FragmentRows<Cfg, View::kBAlongK, FN, 8>;
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {  // accumulator e: mma row lane/4 + 8 (e/2), column 2 (lane%4) + e%2
        stage_output<View, Cfg>(view, c_tile, m0, n0, RowsOfA::row(warp_m0, i, lane / 4 + e / 2 * 8),
                                ColumnsOfB::row(warp_n0, j, lane % 4 * 2 + e % 2), acc[i][j][e]);
      }
  __syncthreads();
  write_output_tile<View, Cfg>(view, c_tile, m0, n0);
#else
  __trap();
#endif
}

// One kernel variant (above 48 KiB of dynamic shared memory it is asked for first).
template <class View, class Cfg, bool VecA, bool VecB>
void launch_gemm_variant(const View& view, dim3 grid, int k_per_split, cudaStream_t stream) {
  constexpr std::size_t bytes = gemm_shared_bytes<View, Cfg>();
  const auto kernel = implicit_gemm_kernel<View, Cfg, VecA, VecB>;
  allow_shared_bytes(kernel, bytes);
  kernel<<<grid, Cfg::kThreads, bytes, stream>>>(view, k_per_split);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

// Launches view's GEMM with config Cfg: grid (M tiles, N tiles, splits).
template <class View, class Cfg>
void launch_implicit_gemm(const View& view, bool vec_a, bool vec_b, int k_per_split, int splits,
                          cudaStream_t stream) {
  require_tensor_cores("conv2d with more than 4 channels on both sides");
  const dim3 grid(ceil_div(view.M, Cfg::BM), ceil_div(view.N, Cfg::BN), static_cast<unsigned>(splits));
  OOMLAB_CHECK(grid.y <= 65535 && grid.z <= 65535, "conv2d: grid too large for N " << view.N);
  if (vec_a && vec_b) {
    launch_gemm_variant<View, Cfg, true, true>(view, grid, k_per_split, stream);
  } else if (vec_a) {
    launch_gemm_variant<View, Cfg, true, false>(view, grid, k_per_split, stream);
  } else if (vec_b) {
    launch_gemm_variant<View, Cfg, false, true>(view, grid, k_per_split, stream);
  } else {
    launch_gemm_variant<View, Cfg, false, false>(view, grid, k_per_split, stream);
  }
}

}  // namespace oomlab::ops::detail
