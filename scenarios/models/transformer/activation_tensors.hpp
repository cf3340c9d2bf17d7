// The activations of the transformer: one table of shapes for a (B, T) batch, and the tensors
// one block keeps from its forward for its backward. Which tensors are in BlockActivations is
// the memory story: everything here lives from forward to backward in a plain run; with
// activation checkpointing a block's set is dropped after its forward and rebuilt in backward.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/core/tensor.hpp"
#include "scenarios/models/transformer/transformer_config.hpp"

namespace oomlab::model {

// The one table of activation shapes; every allocation in forward and backward uses it.
struct ActivationShapes {
  Shape hidden;   // (B, T, C)     residual stream, norm outputs, projections
  Shape qkv;      // (B, T, (H + 2Hkv)D)  fused q/k/v projection (token-major); (B, T, 3C) without GQA
  Shape heads;    // (B, H, T, D)  q and attention output per head
  Shape kv_heads; // (B, Hkv, T, D) k and v: grouped-query attention's saving
  Shape attn;     // (B, T, H*D)   attention output merged: the output projection's input
  Shape scores;   // (B, H, T, T)  naive attention's probabilities: quadratic in T
  Shape lse;      // (B, H, T)     fused attention's row logsumexp (f32)
  Shape mlp;      // (B, T, F)     MLP hidden
  Shape rows;     // (B*T)         norm statistics and per-token losses (f32)
  Shape logits;   // (B, T, V)
};
ActivationShapes activation_shapes(const TransformerConfig& config, std::int64_t batch,
                                   std::int64_t seq);

// What one block keeps from forward to backward (undefined members are not used by this
// style/attention). The block's output is not here: it is the next block's input, kept in the
// residual stream list.
struct BlockActivations {
  Tensor ln1;           // (B, T, C)     norm of the block input: A operand of the qkv matmul
  Tensor ln1_mean;      // (B*T) f32     gpt2 LayerNorm statistics
  Tensor ln1_rstd;      // (B*T) f32
  Tensor q;             // (B, H, T, D)  attention dtype
  Tensor k, v;          // (B, Hkv, T, D)
  Tensor probs;         // (B, H, T, T)  naive: softmax probabilities (f32)
  Tensor attn_heads;    // (B, H, T, D)  fused: attention output, read by the fused backward
  Tensor lse;           // (B, H, T) f32 fused
  Tensor attn_out;      // (B, T, H*D)   heads merged: A operand of the output projection
  Tensor residual_mid;  // (B, T, C)     x + attention: input of the second norm
  Tensor ln2;           // (B, T, C)
  Tensor ln2_mean;      // (B*T) f32     gpt2
  Tensor ln2_rstd;      // (B*T) f32
  Tensor fc;            // (B, T, F)     gpt2: pre-GELU (the GELU output is recomputed in backward)
  Tensor gate, up;      // (B, T, F)     llama: SwiGLU inputs (its output is recomputed in backward)
};

// Bytes the tensors above take for one block (before allocator rounding), and what the model
// keeps outside the blocks (residual stream, final norm, logits, losses).
std::size_t block_activation_bytes(const TransformerConfig& config, const TrainOptions& options,
                                   std::int64_t batch, std::int64_t seq);
std::size_t outer_activation_bytes(const TransformerConfig& config, const TrainOptions& options,
                                   std::int64_t batch, std::int64_t seq);

}  // namespace oomlab::model
