// conv2d forward and backward-data without a GEMM, for convolutions with at most 4 channels on
// one side (the SR-GAN's RGB convs).
//
// Why it exists: the implicit GEMM is a poor fit there. Measured per call on the H200 (B = 4):
//   forward 3 -> 64 3x3 s1 at 256x256: ~2.3 ms for 0.9 GFLOP (Kd = 27: x's 3 channels are
//     element copies and most of each k-tile is padding);
//   forward 3 -> 64 4x4 s2, 1024x1024 -> 512x512: ~1.9 ms f32 / 0.3 ms bf16;
//   forward 64 -> 3 3x3 s1 at 1024x1024: ~1.7 ms f32 / 1.0 ms bf16 (N = 3 of an 8-wide tile, and
//     the GEMM re-reads each x element once per tap: 9x, L2-bound);
//   backward-data of 64 -> 3 3x3 s1 (dy 3 channels): ~2.0 ms f32 / 0.95 ms bf16;
//   backward-data of 3 -> 64 4x4 s2 (dx 3 channels): ~1.2 ms f32 / 0.5 ms bf16.
// Staging a tile once in shared memory and doing f32 FMAs on the CUDA cores reads each global
// element about once (1 GB of f32 x for 64 -> 3 at 1024x1024: ~0.3 ms) for ~7 GFMA.
// Measured with these kernels (conv_bench, 9f2f90f, f32 / bf16): 64 -> 3 forward 1.00 / 0.72 ms,
// its backward-data 0.85 / 0.77; 3 -> 64 s2 forward 0.29 / 0.25, backward-data 0.72 / 0.64 (cuDNN
// in the same run, f32: 1.40, 1.12, 0.24, 1.47 ms). The 64 -> 3 forward is still ~3x its read time.
//
// Terms: the "input" is the side that is read (x forward, dy backward-data), the "output" the side
// written (y, dx). The "narrow" side has <= 4 channels, the "wide" side the other. Backward-data is
// written as a transposed conv: output pixel o meets input pixel (o + pad - r) / stride through
// tap r when the division is exact (forward: input o * stride - pad + r); w is read in place
// (w[k][r][s][c]: forward out = k, in = c; backward-data out = c, in = k), nothing flipped.
//
// Both kernels cover a tile of 8 x 32 output pixels; each thread owns one column of it (8 pixels,
// one per row), and loops over the taps that reach its column (backward-data at stride > 1: only
// those of its phase, so no FMA multiplies a zero between dy pixels). Staged per tile, as f32:
//   cells:   every input pixel the tile's taps read, zero outside the image;
//   weights: per tap, the block's channels.
// Narrow input, wide output (narrow_in_kernel: 3 -> 64 forward, 64 -> 3 backward-data):
//   256 threads = 32 columns x 8 channel groups of 8 consecutive output channels (64 per block,
//   grid y over the rest). Cells hold 4 floats (the narrow channels, zero padded). Per tap a thread
//   loads its 8 x narrow weights into registers once and reuses them for its 8 pixels: 8 x 8
//   accumulators. A warp stores 4 neighbouring pixels x 64 channels: contiguous when k = 64.
// Wide input, narrow output (narrow_out_kernel: 64 -> 3 forward, 3 -> 64 backward-data):
//   128 threads = 32 columns x 4 warps. The wide channels are staged 16 at a time (20 floats per
//   cell: 16 + 4 so that 8 neighbouring cells' 16-byte reads hit 8 bank groups); warp q owns
//   channels 4q..4q+3 of each chunk: per tap its 4 x narrow weights (a broadcast) and one 16-byte
//   cell per pixel. At the end the 4 warps' sums are added in warp order through shared memory
//   and the tile's narrow outputs stored contiguously: deterministic, no atomics.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/conv/conv_epilogue.cuh"
#include "kernels/conv/direct_narrow.hpp"
#include "kernels/conv/fast_divmod.cuh"
#include "kernels/core/check.hpp"
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/engines.hpp"
#include "kernels/core/launch.cuh"

namespace oomlab::ops::detail {

constexpr int kNarrowMax = 4;                 // narrow values padded to one float4
constexpr int kNarrowTileRows = 8;            // = each thread's pixels (one per row)
constexpr int kNarrowTileCols = 32;           // = the threads of one channel group / warp
constexpr int kNarrowInThreads = 256;
constexpr int kNarrowInGroupChannels = 8;     // consecutive output channels per thread
constexpr int kNarrowInGroups = kNarrowInThreads / kNarrowTileCols;
constexpr int kNarrowInChunk = kNarrowInGroups * kNarrowInGroupChannels;  // output channels per block
constexpr int kNarrowOutThreads = 128;
constexpr int kNarrowOutChunk = 16;           // wide input channels staged per step: 4 per warp
constexpr int kNarrowOutCellStride = 20;      // floats per staged cell
constexpr std::size_t kNarrowReduceBytes =
    sizeof(float) * kNarrowMax * kNarrowTileRows * kNarrowOutThreads;  // [warp][row][column][4]
constexpr std::size_t kNarrowMaxSharedBytes = 112 * 1024;  // two blocks per SM (228 KiB)

template <class T>
struct NarrowConv {
  const T* in;                 // x (n, h, w, c) forward, dy (n, p, q, k) backward-data
  const T* w;                  // (k, r, s, c)
  const T* bias;               // forward only; may be null
  T* out;                      // y forward, dx backward-data
  OutputEpilogue<T> epilogue;  // applied at every output store
  int in_h, in_w, in_channels;
  int out_h, out_w, out_channels;
  int R, S, taps, stride, pad;
  int weight_c;                // w's innermost extent (g.c)
  int offset;                  // backward-data: a multiple of stride >= max(R, S), keeps
                               //   o + pad - r non-negative for the divisions
  int cells_rows, cells_cols;  // staged cells per tile (an upper bound)
  bool vector_in, vector_out;  // 16-byte loads of the wide input / stores of the wide output
  FastDivmod div_tiles_per_image, div_tiles_x, div_cells_cols, div_stride;
};

// w for output channel `out`, input channel `in`, tap (r, s) = tap, as f32.
template <class T, bool kTransposed>
__device__ __forceinline__ float weight_at(const NarrowConv<T>& p, int out, int tap, int in) {
  const std::int64_t index = kTransposed ? (static_cast<std::int64_t>(in) * p.taps + tap) * p.weight_c + out
                                         : (static_cast<std::int64_t>(out) * p.taps + tap) * p.weight_c + in;
  return to_f32(p.w[index]);
}

// Where one tile's output pixels find their input cells (see the top of the file).
template <class T, bool kTransposed>
struct TileTaps {
  int image, row0, col0;  // the tile's first output pixel
  int cell_row0, cell_col0;  // input pixel of staged cell (0, 0)

  __device__ TileTaps(const NarrowConv<T>& p, int tile) {
    int tile_in_image, tile_y, tile_x;
    p.div_tiles_per_image.divmod(tile, image, tile_in_image);
    p.div_tiles_x.divmod(tile_in_image, tile_y, tile_x);
    row0 = tile_y * kNarrowTileRows, col0 = tile_x * kNarrowTileCols;
    if (kTransposed) {  // the lowest input pixel any tap reaches: floor((o0 + pad - (R-1)) / stride)
      cell_row0 = first_cell(p, row0, p.R);
      cell_col0 = first_cell(p, col0, p.S);
    } else {
      cell_row0 = row0 * p.stride - p.pad;
      cell_col0 = col0 * p.stride - p.pad;
    }
  }
  __device__ static int first_cell(const NarrowConv<T>& p, int o0, int extent) {
    int quotient, remainder;
    p.div_stride.divmod(o0 + p.pad - (extent - 1) + p.offset, quotient, remainder);
    return quotient - p.offset / p.stride;
  }

  // rows[i]: the staged row that tap row r reads for the tile's row i, or -1 (no input pixel).
  __device__ void tap_rows(const NarrowConv<T>& p, int r, int (&rows)[kNarrowTileRows]) const {
    if (kTransposed) {
      int row, phase;
      p.div_stride.divmod(row0 + p.pad - r + p.offset, row, phase);
      row -= p.offset / p.stride + cell_row0;
#pragma unroll
      for (int i = 0; i < kNarrowTileRows; ++i) {
        rows[i] = phase == 0 ? row : -1;
        if (++phase == p.stride) phase = 0, ++row;
      }
    } else {
#pragma unroll
      for (int i = 0; i < kNarrowTileRows; ++i) rows[i] = i * p.stride + r;
    }
  }

  // The taps s that reach the tile's column `column`: s = first + j * step for j < count, reading
  // staged column cell + j * cell_step. Backward-data: only the column's phase.
  struct ColumnTaps { int first, step, count, cell, cell_step; };
  __device__ ColumnTaps column_taps(const NarrowConv<T>& p, int column) const {
    if (!kTransposed) return {0, 1, p.S, column * p.stride, 1};
    int quotient, first;
    p.div_stride.divmod(col0 + column + p.pad + p.offset, quotient, first);
    const int count = first < p.S ? (p.S - 1 - first) / p.stride + 1 : 0;
    return {first, p.stride, count, quotient - p.offset / p.stride - cell_col0, -1};
  }

  // Calls visit(tap, cell_col, rows) for every tap (r, s) that reaches the thread's column.
  template <class Visit>
  __device__ __forceinline__ void for_each_tap(const NarrowConv<T>& p, const ColumnTaps& taps, Visit&& visit) const {
    for (int r = 0; r < p.R; ++r) {
      int rows[kNarrowTileRows];
      tap_rows(p, r, rows);
      for (int t = 0; t < taps.count; ++t) {
        visit(r * p.S + taps.first + t * taps.step, taps.cell + t * taps.cell_step, rows);
      }
    }
  }

  __device__ bool inside(const NarrowConv<T>& p, int row, int col) const {
    return static_cast<unsigned>(row) < static_cast<unsigned>(p.in_h) &&
           static_cast<unsigned>(col) < static_cast<unsigned>(p.in_w);
  }
  __device__ const T* input_pixel(const NarrowConv<T>& p, int row, int col) const {
    return p.in + ((static_cast<std::int64_t>(image) * p.in_h + row) * p.in_w + col) * p.in_channels;
  }
  __device__ T* output_pixel(const NarrowConv<T>& p, int i, int column) const {
    return p.out + ((static_cast<std::int64_t>(image) * p.out_h + row0 + i) * p.out_w + col0 + column) *
                       p.out_channels;
  }
  __device__ bool output_inside(const NarrowConv<T>& p, int i, int column) const {
    return row0 + i < p.out_h && col0 + column < p.out_w;
  }
};

// The first kCount values of a staged float4.
template <int kCount>
__device__ __forceinline__ void unpack(const float4& packed, float (&values)[kCount]) {
  const float all[4] = {packed.x, packed.y, packed.z, packed.w};
#pragma unroll
  for (int n = 0; n < kCount; ++n) values[n] = all[n];
}

// count (<= 8) consecutive channels of the output at element `at`, rounded to T once, then the
// epilogue; 16-byte stores when all 8 are there and the caller says the addresses allow it.
template <class T>
__device__ __forceinline__ void store_channels(const NarrowConv<T>& p, std::int64_t at,
                                               const float (&values)[kNarrowInGroupChannels], int count) {
  constexpr int kVec = 16 / sizeof(T);
  if (p.vector_out && count == kNarrowInGroupChannels) {
#pragma unroll
    for (int part = 0; part < kNarrowInGroupChannels / kVec; ++part) {
      Pack128<T> pack;
#pragma unroll
      for (int e = 0; e < kVec; ++e) pack.values[e] = from_f32<T>(values[part * kVec + e]);
      p.epilogue.apply(pack, at + part * kVec);
      store128(p.out + at + part * kVec, pack);
    }
  } else {
#pragma unroll
    for (int e = 0; e < kNarrowInGroupChannels; ++e) {
      if (e >= count) continue;
      T value = from_f32<T>(values[e]);
      p.epilogue.apply(value, at + e);
      p.out[at + e] = value;
    }
  }
}

template <class T, int kNarrow, bool kTransposed>
__global__ void __launch_bounds__(kNarrowInThreads, 2) narrow_in_kernel(NarrowConv<T> p) {
  extern __shared__ float4 shared_vec[];
  float4* cells = shared_vec;                                  // [cells_rows][cells_cols]
  float4* weights = shared_vec + p.cells_rows * p.cells_cols;  // [tap][channel j][group]
  const int tid = threadIdx.x;
  const int group = tid % kNarrowInGroups, column = tid / kNarrowInGroups;
  const int chunk0 = blockIdx.y * kNarrowInChunk;
  const TileTaps<T, kTransposed> tile(p, blockIdx.x);

  // Weights laid out so that the 8 groups' reads of one (tap, j) are 8 consecutive float4s.
  for (int index = tid; index < p.taps * kNarrowInChunk; index += kNarrowInThreads) {
    const int tap = index / kNarrowInChunk, j = index % kNarrowInChunk / kNarrowInGroups;
    const int out = chunk0 + (index % kNarrowInGroups) * kNarrowInGroupChannels + j;
    float values[kNarrowMax] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (out < p.out_channels) {
#pragma unroll
      for (int n = 0; n < kNarrow; ++n) values[n] = weight_at<T, kTransposed>(p, out, tap, n);
    }
    weights[index] = make_float4(values[0], values[1], values[2], values[3]);
  }
  for (int cell = tid; cell < p.cells_rows * p.cells_cols; cell += kNarrowInThreads) {
    int u, v;
    p.div_cells_cols.divmod(cell, u, v);
    const int row = tile.cell_row0 + u, col = tile.cell_col0 + v;
    float values[kNarrowMax] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (tile.inside(p, row, col)) {
      const T* source = tile.input_pixel(p, row, col);
#pragma unroll
      for (int n = 0; n < kNarrow; ++n) values[n] = to_f32(source[n]);
    }
    cells[cell] = make_float4(values[0], values[1], values[2], values[3]);
  }
  __syncthreads();

  float acc[kNarrowTileRows][kNarrowInGroupChannels];
#pragma unroll
  for (int i = 0; i < kNarrowTileRows; ++i)
#pragma unroll
    for (int j = 0; j < kNarrowInGroupChannels; ++j) acc[i][j] = 0.0f;

  tile.for_each_tap(p, tile.column_taps(p, column), [&](int tap, int cell_col, const int (&rows)[kNarrowTileRows]) {
    float weight[kNarrowInGroupChannels][kNarrow];  // this thread's 8 output channels
#pragma unroll
    for (int j = 0; j < kNarrowInGroupChannels; ++j) {
      unpack(weights[(tap * kNarrowInGroupChannels + j) * kNarrowInGroups + group], weight[j]);
    }
#pragma unroll
    for (int i = 0; i < kNarrowTileRows; ++i) {
      if (kTransposed && rows[i] < 0) continue;  // a row between dy pixels (warp-uniform)
      float values[kNarrow];
      unpack(cells[rows[i] * p.cells_cols + cell_col], values);
#pragma unroll
      for (int j = 0; j < kNarrowInGroupChannels; ++j)
#pragma unroll
        for (int n = 0; n < kNarrow; ++n) acc[i][j] = fmaf(weight[j][n], values[n], acc[i][j]);
    }
  });

  const int channel0 = chunk0 + group * kNarrowInGroupChannels;
  const int count = p.out_channels - channel0 < kNarrowInGroupChannels ? p.out_channels - channel0
                                                                        : kNarrowInGroupChannels;
  if (count <= 0) return;
  float bias[kNarrowInGroupChannels];
#pragma unroll
  for (int j = 0; j < kNarrowInGroupChannels; ++j) {
    bias[j] = p.bias != nullptr && j < count ? to_f32(p.bias[channel0 + j]) : 0.0f;
  }
#pragma unroll
  for (int i = 0; i < kNarrowTileRows; ++i) {
    if (!tile.output_inside(p, i, column)) continue;
    float values[kNarrowInGroupChannels];
#pragma unroll
    for (int j = 0; j < kNarrowInGroupChannels; ++j) values[j] = acc[i][j] + bias[j];
    store_channels(p, tile.output_pixel(p, i, column) + channel0 - p.out, values, count);
  }
}

template <class T, int kNarrow, bool kTransposed>
__global__ void __launch_bounds__(kNarrowOutThreads, 4) narrow_out_kernel(NarrowConv<T> p) {
  extern __shared__ float4 shared_vec[];
  float* cells = reinterpret_cast<float*>(shared_vec);  // [cells_rows][cells_cols][20]
  const std::size_t cell_floats = static_cast<std::size_t>(p.cells_rows) * p.cells_cols * kNarrowOutCellStride;
  constexpr std::size_t kReduceFloats = kNarrowReduceBytes / sizeof(float);
  float4* weights =  // [tap][16 input channels]: the narrow outputs' weights (after the sums' room)
      shared_vec + (cell_floats > kReduceFloats ? cell_floats : kReduceFloats) / 4;
  constexpr int kVec = 16 / sizeof(T);
  constexpr int kVecsPerCell = kNarrowOutChunk / kVec;
  const int tid = threadIdx.x, column = tid % kNarrowTileCols, quad = tid / kNarrowTileCols;
  const TileTaps<T, kTransposed> tile(p, blockIdx.x);
  const auto column_taps = tile.column_taps(p, column);
  const int cells_count = p.cells_rows * p.cells_cols;

  float acc[kNarrowTileRows][kNarrow];
#pragma unroll
  for (int i = 0; i < kNarrowTileRows; ++i)
#pragma unroll
    for (int n = 0; n < kNarrow; ++n) acc[i][n] = 0.0f;

  for (int chunk0 = 0; chunk0 < p.in_channels; chunk0 += kNarrowOutChunk) {
    __syncthreads();  // the previous chunk's reads are done
    for (int index = tid; index < p.taps * kNarrowOutChunk; index += kNarrowOutThreads) {
      const int tap = index / kNarrowOutChunk, in = chunk0 + index % kNarrowOutChunk;
      float values[kNarrowMax] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (in < p.in_channels) {
#pragma unroll
        for (int n = 0; n < kNarrow; ++n) values[n] = weight_at<T, kTransposed>(p, n, tap, in);
      }
      weights[index] = make_float4(values[0], values[1], values[2], values[3]);
    }
    // The chunk's channels of every cell, zero off the image and past the channels.
#pragma unroll 4
    for (int v = tid; v < cells_count * kVecsPerCell; v += kNarrowOutThreads) {
      const int cell = v / kVecsPerCell, part = v % kVecsPerCell;
      int u, c;
      p.div_cells_cols.divmod(cell, u, c);
      const int row = tile.cell_row0 + u, col = tile.cell_col0 + c;
      const int channel = chunk0 + part * kVec;
      // Zeros off the image and past the channels (nothing read there).
      const bool exists = tile.inside(p, row, col) && channel < p.in_channels;
      const Pack128<T> pack = load128_partial(tile.input_pixel(p, row, col) + channel,
                                              exists ? p.in_channels - channel : 0, exists && p.vector_in);
      float4* destination = reinterpret_cast<float4*>(cells + cell * kNarrowOutCellStride + part * kVec);
#pragma unroll
      for (int e = 0; e < kVec; e += 4) {
        destination[e / 4] = make_float4(to_f32(pack.values[e]), to_f32(pack.values[e + 1]),
                                         to_f32(pack.values[e + 2]), to_f32(pack.values[e + 3]));
      }
    }
    __syncthreads();

    const float* quad_cells = cells + quad * 4;
    tile.for_each_tap(p, column_taps, [&](int tap, int cell_col, const int (&rows)[kNarrowTileRows]) {
      float weight[4][kNarrow];  // [this warp's 4 input channels][narrow output]
#pragma unroll
      for (int e = 0; e < 4; ++e) unpack(weights[tap * kNarrowOutChunk + quad * 4 + e], weight[e]);
#pragma unroll
      for (int i = 0; i < kNarrowTileRows; ++i) {
        if (kTransposed && rows[i] < 0) continue;  // a row between dy pixels (warp-uniform)
        float values[4];
        unpack(
            *reinterpret_cast<const float4*>(quad_cells + (rows[i] * p.cells_cols + cell_col) * kNarrowOutCellStride),
            values);
#pragma unroll
        for (int e = 0; e < 4; ++e)
#pragma unroll
          for (int n = 0; n < kNarrow; ++n) acc[i][n] = fmaf(values[e], weight[e][n], acc[i][n]);
      }
    });
  }

  // Sum the 4 warps in warp order through shared memory, then store the tile's outputs: a tile
  // row's 32 pixels x narrow channels are contiguous in global memory.
  __syncthreads();
  float4* sums = shared_vec;  // [quad][row i][column]
#pragma unroll
  for (int i = 0; i < kNarrowTileRows; ++i) {
    float values[kNarrowMax] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < kNarrow; ++n) values[n] = acc[i][n];
    sums[(quad * kNarrowTileRows + i) * kNarrowTileCols + column] =
        make_float4(values[0], values[1], values[2], values[3]);
  }
  __syncthreads();
  const float* sum_values = reinterpret_cast<const float*>(sums);
  constexpr int kQuads = kNarrowOutThreads / kNarrowTileCols;
  constexpr int kTilePixels = kNarrowTileRows * kNarrowTileCols;
  for (int e = tid; e < kTilePixels * kNarrow; e += kNarrowOutThreads) {
    const int pixel = e / kNarrow, n = e % kNarrow;
    const int i = pixel / kNarrowTileCols, col = pixel % kNarrowTileCols;
    if (!tile.output_inside(p, i, col)) continue;
    float total = p.bias != nullptr ? to_f32(p.bias[n]) : 0.0f;
    float sum = 0.0f;
#pragma unroll
    for (int q = 0; q < kQuads; ++q) sum += sum_values[(q * kTilePixels + pixel) * 4 + n];
    total += sum;
    T* destination = tile.output_pixel(p, i, col) + n;
    T value = from_f32<T>(total);
    p.epilogue.apply(value, destination - p.out);
    *destination = value;
  }
}

// ---- host side ----

// Staged cells per tile along one dim: forward (tile - 1) * stride + R; backward-data every dy
// pixel between floor((o0 + pad - R + 1) / stride) and floor((o0 + tile - 1 + pad) / stride).
inline int narrow_cells(int tile, std::int64_t taps, int stride, bool transposed) {
  return static_cast<int>(transposed ? (tile - 1 + taps - 1) / stride + 2 : (tile - 1) * stride + taps);
}

// The wide input staged 16 channels at a time or, narrow input, one float4 a cell; plus weights.
inline std::size_t narrow_shared_bytes(const Conv2dGeometry& g, bool transposed) {
  const std::size_t cells = static_cast<std::size_t>(narrow_cells(kNarrowTileRows, g.r, g.stride, transposed)) *
                            static_cast<std::size_t>(narrow_cells(kNarrowTileCols, g.s, g.stride, transposed));
  const std::size_t taps = static_cast<std::size_t>(g.r * g.s);
  const bool narrow_out = (transposed ? g.c : g.k) <= kNarrowMax;
  if (narrow_out) {
    return std::max(cells * kNarrowOutCellStride * sizeof(float), kNarrowReduceBytes) +
           taps * kNarrowOutChunk * sizeof(float4);
  }
  return (cells + taps * kNarrowInChunk) * sizeof(float4);
}

template <class T>
NarrowConv<T> make_narrow_conv(const Conv2dGeometry& g, bool transposed, const T* in, const T* w,
                               const T* bias, T* out, const EpilogueArgs& epilogue) {
  NarrowConv<T> p{};
  p.in = in, p.w = w, p.bias = bias, p.out = out;
  p.epilogue = OutputEpilogue<T>::make(epilogue);
  p.in_h = static_cast<int>(transposed ? g.p : g.h), p.in_w = static_cast<int>(transposed ? g.q : g.w);
  p.out_h = static_cast<int>(transposed ? g.h : g.p), p.out_w = static_cast<int>(transposed ? g.w : g.q);
  p.in_channels = static_cast<int>(transposed ? g.k : g.c);
  p.out_channels = static_cast<int>(transposed ? g.c : g.k);
  p.R = static_cast<int>(g.r), p.S = static_cast<int>(g.s), p.taps = p.R * p.S;
  p.stride = g.stride, p.pad = g.pad;
  p.weight_c = static_cast<int>(g.c);
  p.offset = g.stride * ((std::max(p.R, p.S) + g.stride - 1) / g.stride);
  p.cells_rows = narrow_cells(kNarrowTileRows, g.r, g.stride, transposed);
  p.cells_cols = narrow_cells(kNarrowTileCols, g.s, g.stride, transposed);
  constexpr int kVec = 16 / sizeof(T);
  p.vector_in = p.in_channels % kVec == 0 && aligned16({in});
  p.vector_out = p.out_channels % kNarrowInGroupChannels == 0 && aligned16({out}) && epilogue_aligned(epilogue);
  const int tiles_x = (p.out_w + kNarrowTileCols - 1) / kNarrowTileCols;
  const int tiles_y = (p.out_h + kNarrowTileRows - 1) / kNarrowTileRows;
  p.div_tiles_per_image = FastDivmod(tiles_x * tiles_y);
  p.div_tiles_x = FastDivmod(tiles_x);
  p.div_cells_cols = FastDivmod(p.cells_cols);
  p.div_stride = FastDivmod(p.stride);
  return p;
}

template <bool kNarrowOut, class T, int kNarrow, bool kTransposed>
void launch_narrow_variant(const NarrowConv<T>& p, std::int64_t tiles, std::size_t bytes, cudaStream_t stream) {
  const auto kernel =
      kNarrowOut ? narrow_out_kernel<T, kNarrow, kTransposed> : narrow_in_kernel<T, kNarrow, kTransposed>;
  if (bytes > 48 * 1024) allow_shared_bytes(kernel, bytes);  // above the default: what it needs
  OOMLAB_CHECK(tiles <= 0x7fffffff, "conv2d: " << tiles << " tiles are too many for the direct kernels");
  const dim3 grid(static_cast<unsigned>(tiles),
                  kNarrowOut ? 1u : ceil_div(static_cast<std::size_t>(p.out_channels), kNarrowInChunk));
  kernel<<<grid, kNarrowOut ? kNarrowOutThreads : kNarrowInThreads, bytes, stream>>>(p);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

template <bool kNarrowOut, class T, bool kTransposed>
void launch_narrow_count(int narrow, const NarrowConv<T>& p, std::int64_t tiles, std::size_t bytes,
                         cudaStream_t stream) {
  switch (narrow) {
    case 1: return launch_narrow_variant<kNarrowOut, T, 1, kTransposed>(p, tiles, bytes, stream);
    case 2: return launch_narrow_variant<kNarrowOut, T, 2, kTransposed>(p, tiles, bytes, stream);
    case 3: return launch_narrow_variant<kNarrowOut, T, 3, kTransposed>(p, tiles, bytes, stream);
    case 4: return launch_narrow_variant<kNarrowOut, T, 4, kTransposed>(p, tiles, bytes, stream);
    default: OOMLAB_CHECK(false, "conv2d: " << narrow << " narrow channels (1-4 expected)");
  }
}

template <class T, bool kTransposed>
void launch_narrow(const Conv2dGeometry& g, const T* in, const T* w, const T* bias, T* out,
                   const EpilogueArgs& epilogue, cudaStream_t stream) {
  const NarrowConv<T> p = make_narrow_conv(g, kTransposed, in, w, bias, out, epilogue);
  const bool narrow_out = p.out_channels <= kNarrowMax;
  const std::int64_t tiles = g.n * ((p.out_h + kNarrowTileRows - 1) / kNarrowTileRows) *
                             ((p.out_w + kNarrowTileCols - 1) / kNarrowTileCols);
  const std::size_t bytes = narrow_shared_bytes(g, kTransposed);
  if (narrow_out) {
    launch_narrow_count<true, T, kTransposed>(p.out_channels, p, tiles, bytes, stream);
  } else {
    launch_narrow_count<false, T, kTransposed>(p.in_channels, p, tiles, bytes, stream);
  }
}

template <class T>
void launch_narrow_forward(const Conv2dGeometry& g, const T* x, const T* w, const T* bias, T* y,
                           const EpilogueArgs& epilogue, cudaStream_t stream) {
  launch_narrow<T, false>(g, x, w, bias, y, epilogue, stream);
}

template <class T>
void launch_narrow_backward_data(const Conv2dGeometry& g, const T* dy, const T* w, T* dx,
                                 const EpilogueArgs& epilogue, cudaStream_t stream) {
  launch_narrow<T, true>(g, dy, w, nullptr, dx, epilogue, stream);
}

}  // namespace oomlab::ops::detail
