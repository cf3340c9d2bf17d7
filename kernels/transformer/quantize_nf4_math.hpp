// The NF4 rules (QLoRA's 4-bit NormalFloat with double-quantised block scales, as bitsandbytes'
// quantize_4bit(quant_type="nf4", blocksize=64, compress_statistics=True) stores them), shared by
// the CPU reference and the CUDA kernels so both produce the same bits. See quantize_nf4.hpp for
// the layout.
#pragma once
#include <cstdint>

#include "kernels/core/host_device.hpp"
#include "kernels/transformer/adamw8bit_math.hpp"  // the signed dynamic map of the second level

namespace oomlab::ops {

constexpr std::int64_t kNf4Block = 64;          // values per absmax (bitsandbytes' blocksize)
constexpr std::int64_t kNf4AbsmaxBlock = 256;   // absmax values per second-level scale
constexpr int kNf4Codes = 16;

// Code c's value: bitsandbytes' nf4_dequantization_lut (csrc/kernels.cu), the quantiles of
// N(0, 1) scaled to [-1, 1] with an exact zero (Dettmers et al. 2023, appendix E).
OOMLAB_HOST_DEVICE inline float nf4_value(int code) {
  constexpr float kValues[kNf4Codes] = {
      -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
      -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
      0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
      0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};
  return kValues[code & 0x0F];
}

// The code of x (already multiplied by 1 / absmax): the number of thresholds below it, with
// bitsandbytes' thresholds (dQuantizeNF4's decision tree: the midpoints between neighbouring
// values). So the nearest value wins, and x exactly on a threshold takes the LOWER code, as
// `x > threshold` does there. NaN compares false everywhere: code 0, as in bitsandbytes.
OOMLAB_HOST_DEVICE inline std::uint8_t nf4_quantize(float x) {
  constexpr float kThresholds[kNf4Codes - 1] = {
      -0.8480964004993439f, -0.6106329262256622f, -0.4599952697753906f, -0.33967943489551544f,
      -0.23460740596055984f, -0.13791173323988914f, -0.045525018125772476f, 0.03979014977812767f,
      0.1202552504837513f, 0.2035212516784668f, 0.2920137718319893f, 0.3893125355243683f,
      0.5016634166240692f, 0.6427869200706482f, 0.8614784181118011f};
  std::uint8_t code = 0;
  for (int i = 0; i < kNf4Codes - 1; ++i) code += x > kThresholds[i] ? 1 : 0;
  return code;
}

// Two codes in one byte: the first value of the pair in the high nibble (bitsandbytes'
// kQuantizeBlockwise: qvals[j] = q(vals[2j]) << 4 | q(vals[2j + 1])).
OOMLAB_HOST_DEVICE inline std::uint8_t nf4_pack(std::uint8_t first, std::uint8_t second) {
  return static_cast<std::uint8_t>(first << 4 | second);
}
OOMLAB_HOST_DEVICE inline int nf4_first(std::uint8_t byte) { return byte >> 4; }
OOMLAB_HOST_DEVICE inline int nf4_second(std::uint8_t byte) { return byte & 0x0F; }

// What a block's values are multiplied by before nf4_quantize: 1 / absmax as bitsandbytes does,
// and 0 for an all-zero block so that its values get code 7 (exactly 0.0) rather than
// bitsandbytes' NaN (0 * inf), which gives code 0 (-1.0).
OOMLAB_HOST_DEVICE inline float nf4_inverse_absmax(float absmax) { return absmax > 0.0f ? 1.0f / absmax : 0.0f; }

// a * b rounded by itself: a compiler may fuse it with a following add or subtract into one FMA
// (one rounding, not two), nvcc by default, a host compiler where the CPU has FMA, and the
// kernels' and the reference's bits would part. On the host the exact product (48 bits fit a
// double) is rounded to float once, and a conversion cannot be fused.
OOMLAB_HOST_DEVICE inline float nf4_product(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return static_cast<float>(static_cast<double>(a) * static_cast<double>(b));
#endif
}

// Second level: absmax - offset of one 256-block, divided by that block's largest magnitude
// (`scale`), as the index of the nearest entry of the signed dynamic map (adamw8bit_math.hpp;
// bitsandbytes' quantize_blockwise with its default code, create_dynamic_map(signed=True)).
OOMLAB_HOST_DEVICE inline std::uint8_t nf4_quantize_absmax(const float* dynamic_map, float centered, float scale) {
  return dynamic_quantize(dynamic_map, nf4_product(centered, scale > 0.0f ? 1.0f / scale : 0.0f));
}

// A block's absmax back from its code: map value * scale + offset (dequantize_blockwise, then
// `absmax += offset`).
OOMLAB_HOST_DEVICE inline float nf4_absmax(const float* dynamic_map, std::uint8_t code, float scale, float offset) {
  return nf4_product(dynamic_map[code], scale) + offset;
}

}  // namespace oomlab::ops
