// conv2d forward and backward-data for 16-bit 3x3 stride-1 convolutions with 64 channels in and
// out (the SR-GAN's residual convs), on Hopper's wgmma, by shifted windows instead of gathered taps.
//
// Why: the implicit GEMM (implicit_gemm_sm90.cuh) gathers a 128 x 64 tile of input taps per
// k-tile and reloads the weights in every block: ~1.7 KB of L2 traffic per output pixel for
// 64 -> 64, which held the H200 at ~258 TFLOP/s (0.075 ms at B4 256x256).
// Here the weights of a 64-channel output chunk (9 taps x 64 x 64, 72 KB) stay in shared memory
// for the whole kernel, and each item, one 64-pixel segment of one output row, stages only the 3
// input rows it meets (64 + 2 pixels each, zeros outside the image). Tap (r, s)'s A operand is
// input row r shifted by s pixels: the same staged lines read s 128-byte lines further on (wgmma's
// 128-byte swizzle is applied to the address, see wgrad_shifted_sm90.cuh), K-major with the 64
// input channels along each line; B is the tap's weight tile.
//
// Block: two warpgroups, one per SM (the weights and rings fill shared memory), each running its
// own items with its own ring of 3 stages (copies two items ahead, named barriers), so one
// warpgroup's stores overlap the other's products. Grid: (blocks, output chunks of 64 channels).
// Epilogue per item: bias, rounding, then conv_epilogue.cuh's element-wise ops, from registers.
// Backward-data is the same convolution of dy with the weights flipped and transposed
// (w_t[c][r][s][k] read at tap (2 - r, 2 - s)) and padding 2 - pad.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "harness/memory/cuda_check.hpp"
#include "kernels/conv/conv_epilogue.cuh"
#include "kernels/core/check.hpp"
#include "kernels/core/device_image.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/core/mma_sm80.cuh"
#include "kernels/core/wgmma_sm90.cuh"

namespace oomlab::ops::detail {

constexpr int kShiftedConvTaps = 3;         // per kernel row and column
constexpr int kShiftedConvChannels = 64;    // input channels; output channels per chunk
constexpr int kShiftedConvPixels = 64;      // output pixels per item (one warpgroup's m64)
constexpr int kShiftedConvLines = kShiftedConvPixels + kShiftedConvTaps - 1;  // staged pixels per input row
constexpr int kShiftedConvStages = 3;       // per warpgroup
constexpr int kShiftedConvWeightBytes = kShiftedConvTaps * kShiftedConvTaps * kShiftedConvChannels * 128;
// One stage: 3 input rows of 66 lines, packed (the swizzle follows the absolute line), 1024-byte
// multiple.
constexpr int kShiftedConvStageBytes = (kShiftedConvTaps * kShiftedConvLines * 128 + 1023) / 1024 * 1024;
constexpr std::size_t kShiftedConvSharedBytes =
    kShiftedConvWeightBytes + std::size_t{2} * kShiftedConvStages * kShiftedConvStageBytes + 1024;

template <class T>
struct ShiftedConv {
  const T* x;        // (n, h, w, 64)
  const T* w;        // (k, 3, 3, 64), read at tap (2 - r, 2 - s) when flip
  const T* bias;     // (k) or null
  T* y;              // (n, p, q, k)
  OutputEpilogue<T> epilogue;
  int H, W, P, Q, K, pad;
  bool flip;
  int segments;      // per output row: ceil(q / 64)
  int items;         // n * p * segments
};

__device__ __forceinline__ void warpgroup_barrier(int warpgroup) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(warpgroup + 1) : "memory");
}

template <class T>
__global__ void __launch_bounds__(256, 1) shifted_conv_kernel(ShiftedConv<T> params) {
#if OOMLAB_IMAGE_SM90A
  extern __shared__ __align__(1024) unsigned char shared_raw[];
  unsigned char* weights = shared_raw + (1024 - shared_address(shared_raw) % 1024) % 1024;
  const int warpgroup = threadIdx.x / 128, thread = threadIdx.x % 128;
  unsigned char* ring = weights + kShiftedConvWeightBytes + warpgroup * kShiftedConvStages * kShiftedConvStageBytes;
  constexpr int kAhead = kShiftedConvStages - 1;  // each item's products finish before the next item
  const int k0 = blockIdx.y * kShiftedConvChannels;

  // The chunk's weights: tap tile (r, s) = 64 lines (output channel) x 64 input channels.
  for (int i = threadIdx.x; i < kShiftedConvTaps * kShiftedConvTaps * kShiftedConvChannels * 8; i += 256) {
    const int tap = i / (kShiftedConvChannels * 8), line = i / 8 % kShiftedConvChannels, chunk = i % 8;
    const int source_tap = params.flip ? kShiftedConvTaps * kShiftedConvTaps - 1 - tap : tap;
    const T* from = params.w +
                    (static_cast<std::int64_t>(k0 + line) * kShiftedConvTaps * kShiftedConvTaps + source_tap) *
                        kShiftedConvChannels +
                    chunk * 8;
    cp_async_16(weights + tap * kShiftedConvChannels * 128 + swizzled_chunk_offset(line, chunk), from, true);
  }
  cp_async_commit();

  // This warpgroup's items: item = first + i * step, an output row segment (n, p, q0).
  const int first = blockIdx.x * 2 + warpgroup, step = gridDim.x * 2;
  const int count = first < params.items ? (params.items - first + step - 1) / step : 0;
  auto load_item = [&](int i) {
    const int item = first + i * step;
    const int q0 = item % params.segments * kShiftedConvPixels, row = item / params.segments;
    const int n = row / params.P, p = row % params.P;
    unsigned char* stage = ring + i % kShiftedConvStages * kShiftedConvStageBytes;
    for (int c = thread; c < kShiftedConvTaps * kShiftedConvLines * 8; c += 128) {
      const int line = c / 8, chunk = c % 8, r = line / kShiftedConvLines;
      const int h = p + r - params.pad, w = q0 - params.pad + line % kShiftedConvLines;
      const bool valid = static_cast<unsigned>(h) < static_cast<unsigned>(params.H) &&
                         static_cast<unsigned>(w) < static_cast<unsigned>(params.W);
      const T* from =
          params.x + ((static_cast<std::int64_t>(n) * params.H + h) * params.W + w) * kShiftedConvChannels + chunk * 8;
      cp_async_16(stage + swizzled_chunk_offset(line, chunk), valid ? from : params.x, valid);
    }
  };
#pragma unroll
  for (int i = 0; i < kAhead; ++i) {
    if (i < count) load_item(i);
    cp_async_commit();
  }
  cp_async_wait<kAhead>();  // this thread's weight copies
  fence_shared_for_wgmma();
  __syncthreads();          // everyone's

  const int warp = thread / 32, lane = thread % 32;
  for (int i = 0; i < count; ++i) {
    cp_async_wait<kAhead - 1>();
    fence_shared_for_wgmma();
    warpgroup_barrier(warpgroup);  // the warpgroup's copies of item i; item i - 1's stores are done
    if (i + kAhead < count) load_item(i + kAhead);  // into item i - 1's stage, whose products are done
    cp_async_commit();

    const unsigned stage_at = shared_address(ring + i % kShiftedConvStages * kShiftedConvStageBytes);
    const unsigned weights_at = shared_address(weights);
    float acc[32];
    wgmma_fence();
#pragma unroll
    for (int r = 0; r < kShiftedConvTaps; ++r)
#pragma unroll
      for (int s = 0; s < kShiftedConvTaps; ++s)
#pragma unroll
        for (int ks = 0; ks < kShiftedConvChannels / 16; ++ks) {
          const unsigned a = stage_at + (r * kShiftedConvLines + s) * 128 + 32 * ks;
          const unsigned b = weights_at + (r * kShiftedConvTaps + s) * kShiftedConvChannels * 128 + 32 * ks;
          wgmma_tile<T, 64>(acc, wgmma_descriptor(a), wgmma_descriptor(b), r + s + ks > 0);
        }
    wgmma_commit();
    wgmma_wait<0>();

    // Accumulator d[4j + e] of warp w, lane (g, t): pixel q0 + 16w + g + 8 (e / 2), channel 8j + 2t + e % 2.
    const int item = first + i * step;
    const int q0 = item % params.segments * kShiftedConvPixels, row = item / params.segments;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int q = q0 + 16 * warp + lane / 4 + 8 * half;
      if (q >= params.Q) continue;
      const std::int64_t pixel = (static_cast<std::int64_t>(row) * params.Q + q) * params.K;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int k = k0 + 8 * j + lane % 4 * 2;
        float v0 = acc[4 * j + 2 * half], v1 = acc[4 * j + 2 * half + 1];
        if (params.bias != nullptr) v0 += to_f32(params.bias[k]), v1 += to_f32(params.bias[k + 1]);
        T out[2] = {from_f32<T>(v0), from_f32<T>(v1)};
        params.epilogue.apply(out[0], pixel + k);
        params.epilogue.apply(out[1], pixel + k + 1);
        *reinterpret_cast<std::uint32_t*>(params.y + pixel + k) = *reinterpret_cast<const std::uint32_t*>(out);
      }
    }
  }
  cp_async_wait<0>();
#else
  __trap();
#endif
}

// Whether the shifted-window kernel takes a forward-shaped convolution (the caller checks the
// dtype and device_runs_wgmma()): 3x3, stride 1, padding <= 2, 64 input and 64 output channels,
// 16-byte aligned input and weights, 4-byte aligned output and epilogue tensors (the stores write
// channel pairs). The kernel computes any number of 64-channel output chunks, but with more than
// one each chunk's blocks stage the input rows again: 64 -> 256 at 512x512 ran its forward in
// 0.875 ms here against 0.843 on the implicit GEMM (H200), so only one chunk is taken.
inline bool shifted_conv_applies(int r, int s, int stride, int pad, std::int64_t in_channels,
                                 std::int64_t out_channels, const void* x, const void* w, const void* y,
                                 const EpilogueArgs& epilogue) {
  const auto aligned4 = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 4 == 0; };
  return r == kShiftedConvTaps && s == kShiftedConvTaps && stride == 1 && pad >= 0 && pad <= 2 &&
         in_channels == kShiftedConvChannels && out_channels == kShiftedConvChannels && aligned16({x, w}) &&
         aligned4(y) && aligned4(epilogue.addend) && aligned4(epilogue.activation_output);
}

template <class T>
void launch_shifted_conv(const ShiftedConv<T>& params, cudaStream_t stream) {
  const int sms = current_device_sm_count();
  const int chunks = params.K / kShiftedConvChannels;
  OOMLAB_CHECK(chunks <= 65535, "conv2d: too many output channels " << params.K);
  // One block per SM over all chunks, at least one per chunk, no more than items need.
  const int per_chunk = std::max(1, std::min(sms / std::max(chunks, 1), (params.items + 1) / 2));
  const auto kernel = shifted_conv_kernel<T>;
  allow_shared_bytes(kernel, kShiftedConvSharedBytes);
  kernel<<<dim3(per_chunk, chunks), 256, kShiftedConvSharedBytes, stream>>>(params);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace oomlab::ops::detail
