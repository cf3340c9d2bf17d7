// conv2d backward-weight without a GEMM, for convolutions with at most 4 channels on one side.
//
// Why it exists: the implicit GEMM (dw^T = x taps * dy, M = r*s*c, N = k, Kd = n*p*q) is a poor
// fit for the SR-GAN's two RGB convs. Measured on the H200, bf16, B=4:
//   64 -> 3, 3x3 s1 at 1024x1024 (the generator's output conv): 2.64 ms vs cuDNN 0.78 ms; N = 3
//     fills 3 of each 8-wide mma column tile and dy's 3 channels (6 bytes) are element copies;
//   3 -> 64, 4x4 s2 at 1024x1024 -> 512x512 (the discriminator's input conv): ~2 ms a call;
//     M = 48 and x's 3 channels are element copies.
// Both read ~0.1-0.2 GB and do 6-15 GFLOP, so f32 FMAs on the CUDA cores are enough.
//
// Terms: the "narrow" operand is the one with <= 4 channels (x when c <= 4, else dy), the
// "wide" operand the other. Each block owns 16 wide channels (grid x) and one partial (grid y:
// a fixed, contiguous range of tiles), and walks its tiles of 8 x 32 positions of the wide
// operand's grid (dy's p x q, or x's h x w). Per tile it stages, as f32:
//   wide:   the tile's 256 positions x 16 channels (16-byte loads when the channels allow);
//   narrow: every narrow cell the tile's taps read, zero outside the image, 4 floats a cell.
// Thread t owns one tap (r, s) = t % taps and one pixel group t / taps; it loops over its group's
// positions of the tile, and per position multiplies 16 wide values by the narrow cell its tap
// reads: 16 * narrow accumulators. Threads of one position share the wide loads (a broadcast);
// each tap reads its own 16-byte narrow cell.
//   narrow c (x): position = dy pixel (p, q); its tap reads x (p*stride - pad + r, q*stride - pad + s).
//   narrow k (dy): position = x pixel (h, w); tap (r, s) meets dy pixel ((h + pad - r) / stride,
//     likewise w) when both divide evenly. dy is staged "dilated" (zeros between pixels), so a
//     stride > 1 multiplies zeros on all but 1/stride^2 of the positions: correct, and no such
//     conv is hot (the SR-GAN's narrow-k convs are stride 1).
// At the end the pixel groups' sums are added in group order through shared memory and written to
// the block's partial ([split][k][r][s][c], the GEMM path's layout): deterministic, no atomics.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/conv/conv2d_launch.hpp"
#include "kernels/conv/fast_divmod.cuh"
#include "kernels/core/check.hpp"
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/engines.hpp"
#include "kernels/core/launch.cuh"

namespace oomlab::ops::detail {

constexpr int kSmallWgradThreads = 256;
constexpr int kSmallWgradTileRows = 8;
constexpr int kSmallWgradTileCols = 32;  // a power of two: positions split by shift and mask
constexpr int kSmallWgradTilePositions = kSmallWgradTileRows * kSmallWgradTileCols;
constexpr int kSmallWgradChunk = 16;        // wide channels per block
constexpr int kSmallWgradWideStride = 20;   // floats per staged position: 16 + 4 so that 8
                                            // consecutive positions' 16-byte loads hit 8 bank groups
constexpr int kSmallWgradMaxNarrow = 4;     // narrow values padded to one float4 per cell
constexpr std::size_t kSmallWgradWideBytes =
    sizeof(float) * kSmallWgradTilePositions * kSmallWgradWideStride;
constexpr std::size_t kSmallWgradMaxSharedBytes = 96 * 1024;
static_assert(kSmallWgradThreads * kSmallWgradChunk <= kSmallWgradTilePositions * kSmallWgradWideStride,
              "the final reduction reuses the wide tile's shared memory");

template <class T>
struct SmallChannelWgrad {
  const T* wide;             // (n, wide_h, wide_w, wide_channels)
  const T* narrow;           // (n, narrow_h, narrow_w, narrow channels)
  float* partials;           // [split][k][r][s][c]
  int wide_h, wide_w, wide_channels;
  int narrow_h, narrow_w;
  int taps, S;               // r*s taps of the kernel, S of them per row
  int stride;
  int origin_scale;          // narrow cell (0, 0) of the tile at wide (row0, col0):
  int origin_row_offset;     //   (row0 * origin_scale - origin_row_offset, likewise col)
  int origin_col_offset;
  int cell_step;             // narrow cells between neighbouring wide positions
  int cells_rows, cells_cols;
  int tiles, splits;
  std::int64_t weights;      // k*r*s*c: one partial
  bool vector_wide;          // 16-byte loads of the wide channels
  FastDivmod div_tiles_per_image, div_tiles_x, div_cells_cols, div_s;
};

template <class T, int kNarrow, bool kNarrowIsK>
__global__ void __launch_bounds__(kSmallWgradThreads, 2)
    small_channel_wgrad_kernel(SmallChannelWgrad<T> params) {
  extern __shared__ float4 shared_vec[];
  float* wide_tile = reinterpret_cast<float*>(shared_vec);
  float* narrow_cells = wide_tile + kSmallWgradTilePositions * kSmallWgradWideStride;
  constexpr int kVec = 16 / sizeof(T);                  // elements in a 16-byte load
  constexpr int kVecsPerPosition = kSmallWgradChunk / kVec;
  constexpr int kWideLoads = kSmallWgradTilePositions * kVecsPerPosition / kSmallWgradThreads;
  static_assert(kWideLoads * kSmallWgradThreads == kSmallWgradTilePositions * kVecsPerPosition,
                "every thread stages the same number of wide vectors");

  const int tid = threadIdx.x;
  const int chunk0 = blockIdx.x * kSmallWgradChunk;
  const int split = blockIdx.y;
  const int tap = tid % params.taps, group = tid / params.taps;
  const int groups = kSmallWgradThreads / params.taps;
  int r, s;
  params.div_s.divmod(tap, r, s);
  // The cell this tap reads for wide position (0, 0) of a tile (see the top of the file).
  const int tap_row = kNarrowIsK ? (params.taps / params.S - 1 - r) : r;
  const int tap_col = kNarrowIsK ? (params.S - 1 - s) : s;
  const float* tap_cells = narrow_cells + (tap_row * params.cells_cols + tap_col) * 4;
  const int cell_row_step = params.cell_step * params.cells_cols * 4;  // floats per tile row
  const int cell_col_step = params.cell_step * 4;

  float acc[kSmallWgradChunk][kNarrow];
#pragma unroll
  for (int e = 0; e < kSmallWgradChunk; ++e)
#pragma unroll
    for (int j = 0; j < kNarrow; ++j) acc[e][j] = 0.0f;

  const int tile_begin = static_cast<int>(static_cast<std::int64_t>(split) * params.tiles / params.splits);
  const int tile_end = static_cast<int>(static_cast<std::int64_t>(split + 1) * params.tiles / params.splits);
  for (int tile = tile_begin; tile < tile_end; ++tile) {
    int image, tile_in_image, tile_y, tile_x;
    params.div_tiles_per_image.divmod(tile, image, tile_in_image);
    params.div_tiles_x.divmod(tile_in_image, tile_y, tile_x);
    const int row0 = tile_y * kSmallWgradTileRows, col0 = tile_x * kSmallWgradTileCols;
    __syncthreads();  // the previous tile's reads are done

    // Wide: 256 positions x 16 channels, zero past the image and past the channels. All of a
    // thread's loads are issued before the first conversion, so they are in flight together.
    float values[kWideLoads][kVec];
#pragma unroll
    for (int load = 0; load < kWideLoads; ++load) {
      const int v = tid + load * kSmallWgradThreads;
      const int position = v / kVecsPerPosition, part = v % kVecsPerPosition;
      const int row = row0 + position / kSmallWgradTileCols, col = col0 + position % kSmallWgradTileCols;
      const int channel = chunk0 + part * kVec;
      // Zeros outside the image and past the channels (nothing read there).
      const bool exists = row < params.wide_h && col < params.wide_w && channel < params.wide_channels;
      const T* source = params.wide +
                        ((static_cast<std::int64_t>(image) * params.wide_h + row) * params.wide_w + col) *
                            params.wide_channels + channel;
      const Pack128<T> pack = load128_partial(source, exists ? params.wide_channels - channel : 0,
                                              exists && params.vector_wide);
#pragma unroll
      for (int e = 0; e < kVec; ++e) values[load][e] = to_f32(pack.values[e]);
    }
#pragma unroll
    for (int load = 0; load < kWideLoads; ++load) {
      const int v = tid + load * kSmallWgradThreads;
      const int position = v / kVecsPerPosition, part = v % kVecsPerPosition;
      float4* destination = reinterpret_cast<float4*>(wide_tile + position * kSmallWgradWideStride + part * kVec);
#pragma unroll
      for (int e = 0; e < kVec; e += 4) {
        destination[e / 4] =
            make_float4(values[load][e], values[load][e + 1], values[load][e + 2], values[load][e + 3]);
      }
    }

    // Narrow: every cell the tile's taps read, as 4 floats (zero past kNarrow and off the image).
    const int origin_row = row0 * params.origin_scale - params.origin_row_offset;
    const int origin_col = col0 * params.origin_scale - params.origin_col_offset;
    for (int cell = tid; cell < params.cells_rows * params.cells_cols; cell += kSmallWgradThreads) {
      int u, v;
      params.div_cells_cols.divmod(cell, u, v);
      int a = origin_row + u, b = origin_col + v;
      bool inside = a >= 0 && b >= 0;
      if (kNarrowIsK) {  // dilated dy: only every stride-th row and column holds a pixel
        inside = inside && a % params.stride == 0 && b % params.stride == 0;
        a /= params.stride;
        b /= params.stride;
      }
      inside = inside && a < params.narrow_h && b < params.narrow_w;
      float values[kSmallWgradMaxNarrow] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (inside) {
        const T* source =
            params.narrow + ((static_cast<std::int64_t>(image) * params.narrow_h + a) * params.narrow_w + b) * kNarrow;
#pragma unroll
        for (int j = 0; j < kNarrow; ++j) values[j] = to_f32(source[j]);
      }
      reinterpret_cast<float4*>(narrow_cells)[cell] = make_float4(values[0], values[1], values[2], values[3]);
    }
    __syncthreads();

    if (group < groups) {
      for (int position = group; position < kSmallWgradTilePositions; position += groups) {
        const int i = position / kSmallWgradTileCols, j = position % kSmallWgradTileCols;
        const float4 cell = *reinterpret_cast<const float4*>(tap_cells + i * cell_row_step + j * cell_col_step);
        const float narrow_values[kSmallWgradMaxNarrow] = {cell.x, cell.y, cell.z, cell.w};
        const float4* wide_values = reinterpret_cast<const float4*>(wide_tile + position * kSmallWgradWideStride);
#pragma unroll
        for (int e4 = 0; e4 < kSmallWgradChunk / 4; ++e4) {
          const float4 packed = wide_values[e4];
          const float wide4[4] = {packed.x, packed.y, packed.z, packed.w};
#pragma unroll
          for (int e = 0; e < 4; ++e)
#pragma unroll
            for (int n = 0; n < kNarrow; ++n) acc[e4 * 4 + e][n] = fmaf(wide4[e], narrow_values[n], acc[e4 * 4 + e][n]);
        }
      }
    }
  }

  // Sum the pixel groups in group order, one narrow channel at a time, through the wide tile.
  float* group_sums = wide_tile;  // [thread][16]
  float* partial = params.partials + split * params.weights;
#pragma unroll
  for (int n = 0; n < kNarrow; ++n) {
    __syncthreads();  // the last tile's reads (or the previous channel's sums) are done
    if (group < groups) {
      float4* mine = reinterpret_cast<float4*>(group_sums + tid * kSmallWgradChunk);
#pragma unroll
      for (int e = 0; e < kSmallWgradChunk; e += 4) {
        mine[e / 4] = make_float4(acc[e][n], acc[e + 1][n], acc[e + 2][n], acc[e + 3][n]);
      }
    }
    __syncthreads();
    for (int out = tid; out < params.taps * kSmallWgradChunk; out += kSmallWgradThreads) {
      const int out_tap = out / kSmallWgradChunk, e = out % kSmallWgradChunk;
      const int wide_channel = chunk0 + e;
      if (wide_channel >= params.wide_channels) continue;
      float total = 0.0f;
      for (int g = 0; g < groups; ++g) total += group_sums[(g * params.taps + out_tap) * kSmallWgradChunk + e];
      // dw[k][r][s][c]: narrow k -> k = n, c = wide; narrow c -> k = wide, c = n.
      const std::int64_t index =
          kNarrowIsK ? (static_cast<std::int64_t>(n) * params.taps + out_tap) * params.wide_channels + wide_channel
                     : (static_cast<std::int64_t>(wide_channel) * params.taps + out_tap) * kNarrow + n;
      partial[index] = total;
    }
  }
}

// Used when one side has <= 4 channels: the narrow values then fit one float4 cell and the 16 x 4
// accumulators stay in registers; from 5 channels up the GEMM's 8-wide mma tiles are over half
// full, and at 8 bf16 channels its 16-byte cp.async gathers work. Also needs one pixel group at
// least (taps <= 256) and the narrow cells within the shared-memory cap.
inline std::size_t small_channel_wgrad_shared_bytes(const Conv2dGeometry& g) {
  const bool narrow_is_k = g.c > kSmallWgradMaxNarrow;
  const std::int64_t rows = narrow_is_k ? kSmallWgradTileRows + g.r - 1
                                        : (kSmallWgradTileRows - 1) * g.stride + g.r;
  const std::int64_t cols = narrow_is_k ? kSmallWgradTileCols + g.s - 1
                                        : (kSmallWgradTileCols - 1) * g.stride + g.s;
  return kSmallWgradWideBytes + static_cast<std::size_t>(rows * cols) * 4 * sizeof(float);
}

inline bool small_channel_wgrad_applies(const Conv2dGeometry& g) {
  return (g.c <= kSmallWgradMaxNarrow || g.k <= kSmallWgradMaxNarrow) && g.r * g.s <= kSmallWgradThreads &&
         small_channel_wgrad_shared_bytes(g) <= std::min(kSmallWgradMaxSharedBytes, max_shared_bytes_per_block());
}

// The kernel's parameters for g (host side). Requires small_channel_wgrad_applies(g). Fills
// partials [0, params.splits), at most max_splits of them.
template <class T>
SmallChannelWgrad<T> make_small_channel_wgrad(const Conv2dGeometry& g, const T* x, const T* dy,
                                              float* partials, int max_splits) {
  const bool narrow_is_k = g.c > kSmallWgradMaxNarrow;
  SmallChannelWgrad<T> params{};
  params.wide = narrow_is_k ? x : dy;
  params.narrow = narrow_is_k ? dy : x;
  params.partials = partials;
  params.wide_h = static_cast<int>(narrow_is_k ? g.h : g.p);
  params.wide_w = static_cast<int>(narrow_is_k ? g.w : g.q);
  params.wide_channels = static_cast<int>(narrow_is_k ? g.c : g.k);
  params.narrow_h = static_cast<int>(narrow_is_k ? g.p : g.h);
  params.narrow_w = static_cast<int>(narrow_is_k ? g.q : g.w);
  params.taps = static_cast<int>(g.r * g.s);
  params.S = static_cast<int>(g.s);
  params.stride = g.stride;
  // narrow c: cell (u, v) is x (row0*stride - pad + u, ...), one tap step = stride cells.
  // narrow k: cell (u, v) is dilated dy (row0 + pad - (r-1) + u, ...), one step = 1 cell.
  params.origin_scale = narrow_is_k ? 1 : g.stride;
  params.origin_row_offset = static_cast<int>(narrow_is_k ? g.r - 1 - g.pad : g.pad);
  params.origin_col_offset = static_cast<int>(narrow_is_k ? g.s - 1 - g.pad : g.pad);
  params.cell_step = narrow_is_k ? 1 : g.stride;
  params.cells_rows = static_cast<int>(narrow_is_k ? kSmallWgradTileRows + g.r - 1
                                                   : (kSmallWgradTileRows - 1) * g.stride + g.r);
  params.cells_cols = static_cast<int>(narrow_is_k ? kSmallWgradTileCols + g.s - 1
                                                   : (kSmallWgradTileCols - 1) * g.stride + g.s);
  const int tiles_x = (params.wide_w + kSmallWgradTileCols - 1) / kSmallWgradTileCols;
  const int tiles_y = (params.wide_h + kSmallWgradTileRows - 1) / kSmallWgradTileRows;
  params.tiles = static_cast<int>(g.n) * tiles_x * tiles_y;
  params.splits = std::min(max_splits, params.tiles);
  params.weights = g.k * g.r * g.s * g.c;
  params.vector_wide = params.wide_channels % (16 / static_cast<int>(sizeof(T))) == 0 &&
                       aligned16({params.wide});
  params.div_tiles_per_image = FastDivmod(tiles_x * tiles_y);
  params.div_tiles_x = FastDivmod(tiles_x);
  params.div_cells_cols = FastDivmod(params.cells_cols);
  params.div_s = FastDivmod(params.S);
  OOMLAB_CHECK(params.splits >= 1 && params.splits <= 65535,
               "conv2d_backward_weight: bad split count " << params.splits);
  return params;
}

// ---- kernel launchers ----

template <class T, int kNarrow, bool kNarrowIsK>
void launch_small_channel_wgrad_variant(const SmallChannelWgrad<T>& params, dim3 grid, std::size_t bytes,
                                        cudaStream_t stream) {
  const auto kernel = small_channel_wgrad_kernel<T, kNarrow, kNarrowIsK>;
  if (bytes > 48 * 1024) allow_shared_bytes(kernel, bytes);  // above the default: what it needs
  kernel<<<grid, kSmallWgradThreads, bytes, stream>>>(params);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

template <class T, bool kNarrowIsK>
void launch_small_channel_wgrad_narrow(int narrow, const SmallChannelWgrad<T>& params, dim3 grid,
                                       std::size_t bytes, cudaStream_t stream) {
  switch (narrow) {
    case 1: return launch_small_channel_wgrad_variant<T, 1, kNarrowIsK>(params, grid, bytes, stream);
    case 2: return launch_small_channel_wgrad_variant<T, 2, kNarrowIsK>(params, grid, bytes, stream);
    case 3: return launch_small_channel_wgrad_variant<T, 3, kNarrowIsK>(params, grid, bytes, stream);
    case 4: return launch_small_channel_wgrad_variant<T, 4, kNarrowIsK>(params, grid, bytes, stream);
    default: OOMLAB_CHECK(false, "conv2d_backward_weight: " << narrow << " narrow channels (1-4 expected)");
  }
}

// Launches the kernel for g; returns how many partials it wrote (see make_small_channel_wgrad).
template <class T>
int launch_small_channel_wgrad(const Conv2dGeometry& g, const T* x, const T* dy, float* partials,
                               int max_splits, cudaStream_t stream) {
  const SmallChannelWgrad<T> params = make_small_channel_wgrad(g, x, dy, partials, max_splits);
  const dim3 grid(ceil_div(static_cast<std::size_t>(params.wide_channels), kSmallWgradChunk),
                  static_cast<unsigned>(params.splits));
  const std::size_t bytes = small_channel_wgrad_shared_bytes(g);
  const bool narrow_is_k = g.c > kSmallWgradMaxNarrow;
  const int narrow = static_cast<int>(narrow_is_k ? g.k : g.c);
  if (narrow_is_k) {
    launch_small_channel_wgrad_narrow<T, true>(narrow, params, grid, bytes, stream);
  } else {
    launch_small_channel_wgrad_narrow<T, false>(narrow, params, grid, bytes, stream);
  }
  return params.splits;
}

}  // namespace oomlab::ops::detail
