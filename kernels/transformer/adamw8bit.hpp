// AdamW with 8-bit moments (bitsandbytes' Adam8bit idea, block-wise dynamic quantisation,
// adamw8bit_math.hpp): per parameter a byte for m and a byte for v instead of 4 + 4, plus an f32
// absmax per block of 2048. Each step dequantises a block, applies the same update as adamw_step
// (adamw_update), and requantises it with the block's new absmax. The f32 master weights and
// the low-precision copy are as in adamw_step.
#pragma once
#include <cstdint>

#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"
#include "kernels/transformer/adamw.hpp"
#include "kernels/transformer/adamw8bit_math.hpp"

namespace oomlab::ops {

// Blocks of a tensor of n moments: ceil(n / kAdam8BitBlock).
inline std::int64_t adam8bit_blocks(std::int64_t n) { return (n + kAdam8BitBlock - 1) / kAdam8BitBlock; }

// master f32 (n); param_copy as adamw_step; grad float (n); m_codes, v_codes i8 (n, bytes read as
// unsigned codes); m_absmax, v_absmax f32 (adam8bit_blocks(n)). All zeros is the zero state.
void adamw8bit_step(Tensor& master, Tensor& param_copy, const Tensor& grad, Tensor& m_codes, Tensor& m_absmax,
                    Tensor& v_codes, Tensor& v_absmax, const AdamWConfig& config, int step);

// The moments a state holds, as f32 (tests and diagnostics).
void dequantize_moments(Tensor& out, const Tensor& codes, const Tensor& absmax, bool is_signed);

namespace cuda {
void adamw8bit_step(Tensor& master, Tensor& param_copy, const Tensor& grad, Tensor& m_codes, Tensor& m_absmax,
                    Tensor& v_codes, Tensor& v_absmax, const AdamWConfig& config, float bias_correction1,
                    float bias_correction2, memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
