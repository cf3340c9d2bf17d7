// int8 per-row absmax quantisation (LLM.int8()-style weight storage): each row r of x (N, C)
// gets scale[r] = absmax(row) / 127 and q = round_half_even(x / scale) in [-127, 127].
// A row of zeros gets scale 0 and q 0.
#pragma once
#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// x: (..., C) float; q: same shape, i8; scales: (rows) f32 with rows = numel / C.
void quantize_int8_rowwise(Tensor& q, Tensor& scales, const Tensor& x);
// out = q * scale[row]; out float of q's shape.
void dequantize_int8_rowwise(Tensor& out, const Tensor& q, const Tensor& scales);

namespace cuda {
void quantize_int8_rowwise(Tensor& q, Tensor& scales, const Tensor& x, memory::StreamHandle stream);
void dequantize_int8_rowwise(Tensor& out, const Tensor& q, const Tensor& scales,
                             memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
