// Casts between the float dtypes (f32 <-> bf16 <-> f16), rounding to nearest even.
#pragma once
#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// out = in converted to out.dtype(); equal numel (shapes may differ, e.g. a flat view).
void cast(Tensor& out, const Tensor& in);

namespace cuda {
void cast(Tensor& out, const Tensor& in, memory::StreamHandle stream);
}

}  // namespace oomlab::ops
