// Moving between the token-major layout the matmuls use, (B, T, S*C) with C = H*D, and the
// head-major layout attention wants, S tensors of (B, H, T, D), converting the dtype on the way
// (compute dtype <-> attention dtype). S = 3 splits a fused qkv projection into q, k, v; S = 1
// merges attention's output heads back into (B, T, C). Each direction is the other's backward.
#pragma once
#include <vector>

#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::model {

// heads[s] (B, H, T, D) = tokens[b, t, s*C + h*D + d]; every heads[s] shares one shape and
// dtype; tokens (B, T, S*C). heads.size() is 1..3. Float dtypes only.
void heads_from_tokens(const std::vector<Tensor*>& heads, const Tensor& tokens);
// The inverse: tokens[b, t, s*C + h*D + d] = heads[s][b, h, t, d].
void tokens_from_heads(Tensor& tokens, const std::vector<const Tensor*>& heads);

namespace cuda {
// to_heads: true gathers tokens -> heads, false scatters heads -> tokens.
void permute_heads(void* const* heads, DType heads_dtype, int count, void* tokens,
                   DType tokens_dtype, std::int64_t batch, std::int64_t seq,
                   std::int64_t num_heads, std::int64_t head_dim, bool to_heads,
                   memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::model
