// The nf4 base's quantise and dequantise as the model calls them (projections.hpp): shapes are
// checked on every device, dry stops there (it needs only the sizes), host and cuda run the
// kernels of kernels/transformer when this build has them and refuse in one line when not.
#pragma once
#include "kernels/core/tensor.hpp"

namespace oomlab::model {

// codes (out, in/2) i8: two 4-bit NormalFloat codes per byte; absmax (blocks) i8 and
// absmax_scale (scale_groups) f32 as nf4_layout (projections.hpp) sizes them; values (out, in).
void quantize_nf4(Tensor& codes, Tensor& absmax, Tensor& absmax_scale, const Tensor& values);
// out (out, in) in a float dtype, from what quantize_nf4 wrote.
void dequantize_nf4(Tensor& out, const Tensor& codes, const Tensor& absmax, const Tensor& absmax_scale);

}  // namespace oomlab::model
