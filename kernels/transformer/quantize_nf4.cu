// NF4 quantisation: CUDA kernels and launchers. Quantise in three launches (the offset is a mean
// over the whole tensor): codes and absmax per block, then the offset, then the absmax' 8-bit
// codes. Dequantise in one: each thread rebuilds its block's absmax and writes 16 bytes of output.
// The arithmetic is quantize_nf4_math.hpp's, in the CPU reference's order (same bits).
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/transformer/quantize_nf4.hpp"
#include "kernels/transformer/quantize_nf4_math.hpp"

namespace oomlab::ops {
namespace {

// CUDA kernels

constexpr unsigned kGroupThreads = kNf4AbsmaxBlock;  // one thread per block of a 256-block group

__device__ void load_signed_dynamic_map(float* map) {
  for (int i = threadIdx.x; i < kDynamicMapSize; i += blockDim.x) map[i] = dynamic_map_value(true, i);
}

// One CTA per 256 blocks, one thread per block of 64 values: absmax, the 32 code bytes, then
// (thread 0, in block order, in double) the group's sum of absmax for the offset. `aligned`: x
// and codes are 16-byte aligned (then every block's values and code bytes are too).
template <class T>
__global__ void nf4_codes_kernel(std::uint8_t* codes, float* block_absmax, double* partial_sums, const T* x,
                                 std::int64_t blocks, bool aligned) {
  constexpr int kPack = Pack128<T>::kSize;
  __shared__ float group_absmax[kGroupThreads];
  const std::int64_t block = static_cast<std::int64_t>(blockIdx.x) * kGroupThreads + threadIdx.x;
  float absmax = 0.0f;
  if (block < blocks) {
    const T* source = x + block * kNf4Block;
    float values[kNf4Block];
#pragma unroll
    for (int p = 0; p < kNf4Block; p += kPack) {
      const Pack128<T> pack = load128_partial(source + p, kPack, aligned);
#pragma unroll
      for (int e = 0; e < kPack; ++e) values[p + e] = to_f32(pack.values[e]);
    }
#pragma unroll
    for (int i = 0; i < kNf4Block; ++i) absmax = fmaxf(absmax, fabsf(values[i]));
    block_absmax[block] = absmax;
    const float inverse = nf4_inverse_absmax(absmax);
    alignas(16) std::uint8_t bytes[kNf4Block / 2];
#pragma unroll
    for (int i = 0; i < kNf4Block; i += 2) {
      bytes[i / 2] = nf4_pack(nf4_quantize(values[i] * inverse), nf4_quantize(values[i + 1] * inverse));
    }
    std::uint8_t* out = codes + block * (kNf4Block / 2);
    if (aligned) {
      reinterpret_cast<uint4*>(out)[0] = reinterpret_cast<const uint4*>(bytes)[0];
      reinterpret_cast<uint4*>(out)[1] = reinterpret_cast<const uint4*>(bytes)[1];
    } else {
      for (int i = 0; i < kNf4Block / 2; ++i) out[i] = bytes[i];
    }
  }
  group_absmax[threadIdx.x] = absmax;
  __syncthreads();
  if (threadIdx.x == 0) {
    const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kGroupThreads;
    const std::int64_t count = blocks - first < kGroupThreads ? blocks - first : kGroupThreads;
    double sum = 0.0;
    for (std::int64_t i = 0; i < count; ++i) sum += group_absmax[i];
    partial_sums[blockIdx.x] = sum;
  }
}

// One thread: the mean of all absmax from the groups' sums, in group order; stored after the
// group scales.
__global__ void nf4_offset_kernel(float* absmax_scale, const double* partial_sums, std::int64_t groups,
                                  std::int64_t blocks) {
  double total = 0.0;
  for (std::int64_t g = 0; g < groups; ++g) total += partial_sums[g];
  absmax_scale[groups] = static_cast<float>(total / static_cast<double>(blocks));
}

// One CTA per group: its scale = max |absmax - offset|, then each absmax' 8-bit code.
__global__ void nf4_absmax_codes_kernel(std::uint8_t* absmax_q, float* absmax_scale, const float* block_absmax,
                                        std::int64_t groups, std::int64_t blocks) {
  __shared__ float map[kDynamicMapSize];
  __shared__ float warp_scales[kGroupThreads / 32];
  load_signed_dynamic_map(map);
  const std::int64_t block = static_cast<std::int64_t>(blockIdx.x) * kGroupThreads + threadIdx.x;
  const float offset = absmax_scale[groups];
  const float centered = block < blocks ? block_absmax[block] - offset : 0.0f;
  const float scale_part = warp_max(fabsf(centered));
  if (threadIdx.x % 32 == 0) warp_scales[threadIdx.x / 32] = scale_part;
  __syncthreads();  // the map and the warps' maxima
  float scale = 0.0f;
  for (int w = 0; w < static_cast<int>(kGroupThreads / 32); ++w) scale = fmaxf(scale, warp_scales[w]);
  if (threadIdx.x == 0) absmax_scale[blockIdx.x] = scale;
  if (block < blocks) absmax_q[block] = nf4_quantize_absmax(map, centered, scale);
}

// One thread per 16 bytes of output (Pack128<T>::kSize values, within one block of 64).
template <class T>
__global__ void nf4_dequantize_kernel(T* out, const std::uint8_t* codes, const std::uint8_t* absmax_q,
                                      const float* absmax_scale, std::int64_t packs, std::int64_t groups,
                                      bool aligned) {
  constexpr int kValues = Pack128<T>::kSize;
  __shared__ float map[kDynamicMapSize];
  load_signed_dynamic_map(map);
  __syncthreads();
  const std::int64_t pack = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pack >= packs) return;
  const std::int64_t first = pack * kValues, block = first / kNf4Block;
  const float absmax = nf4_absmax(map, absmax_q[block], absmax_scale[block / kNf4AbsmaxBlock], absmax_scale[groups]);
  Pack128<T> values;
#pragma unroll
  for (int i = 0; i < kValues; i += 2) {
    const std::uint8_t byte = codes[(first + i) / 2];
    values.values[i] = from_f32<T>(nf4_value(nf4_first(byte)) * absmax);
    values.values[i + 1] = from_f32<T>(nf4_value(nf4_second(byte)) * absmax);
  }
  if (aligned) {
    store128(out + first, values);
  } else {
#pragma unroll
    for (int i = 0; i < kValues; ++i) out[first + i] = values.values[i];
  }
}

}  // namespace

// kernel launchers

namespace cuda {

void quantize_nf4(Tensor& codes, Tensor& absmax_q, Tensor& absmax_scale, const Tensor& x, float* block_absmax,
                  double* partial_sums, memory::StreamHandle stream) {
  const std::int64_t blocks = x.numel() / kNf4Block;
  const std::int64_t groups = (blocks + kNf4AbsmaxBlock - 1) / kNf4AbsmaxBlock;
  const cudaStream_t cuda_stream = as_cuda_stream(stream);
  dispatch_float(x.dtype(), "quantize_nf4", [&](auto zero) {
    using T = decltype(zero);
    nf4_codes_kernel<T><<<static_cast<unsigned>(groups), kGroupThreads, 0, cuda_stream>>>(
        codes.data_as<std::uint8_t>(), block_absmax, partial_sums, x.data_as<const T>(), blocks,
        aligned16({codes.data(), x.data()}));
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
  nf4_offset_kernel<<<1, 1, 0, cuda_stream>>>(absmax_scale.data_as<float>(), partial_sums, groups, blocks);
  OOMLAB_CUDA_CHECK_LAUNCH();
  nf4_absmax_codes_kernel<<<static_cast<unsigned>(groups), kGroupThreads, 0, cuda_stream>>>(
      absmax_q.data_as<std::uint8_t>(), absmax_scale.data_as<float>(), block_absmax, groups, blocks);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

void dequantize_nf4(Tensor& out, const Tensor& codes, const Tensor& absmax_q, const Tensor& absmax_scale,
                    memory::StreamHandle stream) {
  const std::int64_t blocks = out.numel() / kNf4Block;
  const std::int64_t groups = (blocks + kNf4AbsmaxBlock - 1) / kNf4AbsmaxBlock;
  dispatch_float(out.dtype(), "dequantize_nf4", [&](auto zero) {
    using T = decltype(zero);
    constexpr unsigned kBlock = 256;
    const std::int64_t packs = out.numel() / Pack128<T>::kSize;
    nf4_dequantize_kernel<T><<<ceil_div(static_cast<std::size_t>(packs), kBlock), kBlock, 0, as_cuda_stream(stream)>>>(
        out.data_as<T>(), codes.data_as<const std::uint8_t>(), absmax_q.data_as<const std::uint8_t>(),
        absmax_scale.data_as<const float>(), packs, groups, aligned16({out.data()}));
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
