// Moving between the token-major layout the matmuls use, (B, T, W) with W = the heads' H_s*D
// side by side, and the head-major layout attention wants, tensors of (B, H_s, T, D), converting
// the dtype on the way (compute dtype <-> attention dtype). Three tensors split a fused qkv
// projection into q (H heads), k and v (Hkv heads each: grouped-query attention when Hkv < H);
// one merges attention's output heads back into (B, T, H*D). Each direction is the other's
// backward.
#pragma once
#include <vector>

#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::model {

// heads[s] (B, H_s, T, D) = tokens[b, t, (start_s + h)*D + d], start_s = H_0 + ... + H_{s-1};
// every heads[s] shares B, T, D and dtype; tokens (B, T, (H_0 + ...)*D). heads.size() is 1..3.
// Float dtypes only.
void heads_from_tokens(const std::vector<Tensor*>& heads, const Tensor& tokens);
// The inverse: tokens[b, t, (start_s + h)*D + d] = heads[s][b, h, t, d].
void tokens_from_heads(Tensor& tokens, const std::vector<const Tensor*>& heads);

namespace cuda {
// to_heads: true gathers tokens -> heads, false scatters heads -> tokens. head_counts[s]: H_s.
void permute_heads(void* const* heads, DType heads_dtype, int count, void* tokens,
                   DType tokens_dtype, std::int64_t batch, std::int64_t seq,
                   const std::int64_t* head_counts, std::int64_t head_dim, bool to_heads,
                   memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::model
