// Checks on loaded weights that can compare two runs: a digest of the exact bytes (bf16 loads
// must agree bit for bit whichever way they were loaded) and the int8 round-trip error against
// its bound (|x - q * scale| <= scale / 2, plus float rounding).
#pragma once
#include <cstdint>

#include "scenarios/weights7b/checkpoint_source.hpp"
#include "scenarios/weights7b/weight_loader.hpp"

namespace oomlab::scenarios::weights7b {

// FNV-1a over every tensor's name and bytes, in name order (copies device tensors to the host).
std::uint64_t weights_digest(const LoadedWeights& weights);

// max over every quantised element of |x - q * scale| / (scale * (0.5 + 1e-4)), where x is the
// value in `source` (f32, bf16 or f16): <= 1 when every element is within the bound. 0 without
// matrices.
double int8_error_over_bound(const LoadedWeights& weights, const CheckpointSource& source);

}  // namespace oomlab::scenarios::weights7b
