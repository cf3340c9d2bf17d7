// Parameter initialisation: out[i] = stddev * N(0, 1) drawn from (seed, first_index + i)
// (init_normal_math.hpp), written in out's float dtype: slices filled with their offsets hold the
// values the whole tensor would. Same values on host and cuda; nothing is written on dry.
#pragma once
#include <cstdint>

#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

void fill_normal(Tensor& out, std::uint64_t seed, float stddev, std::uint64_t first_index = 0);

namespace cuda {
void fill_normal(Tensor& out, std::uint64_t seed, float stddev, std::uint64_t first_index,
                 memory::StreamHandle stream);
}

}  // namespace oomlab::ops
