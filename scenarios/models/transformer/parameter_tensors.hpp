// Every parameter tensor of the transformer in one struct, llm.c style: layer tensors are stacked
// with a leading L dimension and sliced per layer. The same struct holds the parameters the
// forward reads, their gradients, the f32 master copy and the AdamW moments; the table
// parameter_specs() gives each member's shape, so sizes are computed in one place.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "kernels/core/tensor.hpp"
#include "scenarios/models/transformer/transformer_config.hpp"

namespace oomlab::model {

struct ParameterTensors {
  Tensor wte;          // (V, C)       token embedding (tied_embeddings: also the LM head)
  Tensor wpe;          // (maxT, C)    gpt2: learned positions
  Tensor ln1_w;        // (L, C)       LayerNorm / RMSNorm weight before attention
  Tensor ln1_b;        // (L, C)       gpt2
  Tensor qkv_w;        // (L, (H + 2Hkv)D, C)  fused q, k, v projection (PyTorch Linear layout:
                       //              out, in): q's H*D rows, then k's and v's Hkv*D (3C, C) without GQA
  Tensor qkv_b;        // (L, (H + 2Hkv)D)     qkv_bias: gpt2, Qwen2
  Tensor attn_proj_w;  // (L, C, H*D)  attention output projection
  Tensor attn_proj_b;  // (L, C)       gpt2
  Tensor ln2_w;        // (L, C)       norm before the MLP
  Tensor ln2_b;        // (L, C)       gpt2
  Tensor fc_w;         // (L, F, C)    gpt2: MLP up (then GELU); llama: gate (w1)
  Tensor fc_b;         // (L, F)       gpt2
  Tensor up_w;         // (L, F, C)    llama: up (w3)
  Tensor proj_w;       // (L, C, F)    MLP down (gpt2 c_proj, llama w2)
  Tensor proj_b;       // (L, C)       gpt2
  Tensor lnf_w;        // (C)          final norm
  Tensor lnf_b;        // (C)          gpt2
  Tensor lm_head;      // (V, C)       unless tied_embeddings (gpt2 ties it to wte)
};

enum class InitKind { normal, residual_normal, ones, zeros };

struct ParameterSpec {
  const char* name;
  Tensor ParameterTensors::*member;
  Shape shape;
  // True where every op that writes the gradient sums in f32 and rounds once per call (matmul
  // backward for the weights, the embedding's backward for wte/wpe): the gradient is kept in the
  // compute dtype, as PyTorch keeps a bf16 parameter's. Norm weights and biases get f32 gradients.
  bool compute_dtype_grad;
  InitKind init;
};

// The tensors this style has, in allocation order.
std::vector<ParameterSpec> parameter_specs(const TransformerConfig& config);
std::size_t parameter_elements(const TransformerConfig& config);

// Dtype of each tensor's gradient in a precision mode (see ParameterSpec::compute_dtype_grad).
DType gradient_dtype(const ParameterSpec& spec, Precision precision);

// Allocates every tensor of the table (tag from the current TagScope), dtype chosen per spec;
// shape_of: the shape each is stored in (a packed 4-bit base's differs from the spec's).
template <class DtypeFn, class ShapeFn>
ParameterTensors allocate_parameters(Device& device, const TransformerConfig& config, DtypeFn dtype_of,
                                     ShapeFn shape_of) {
  ParameterTensors tensors;
  for (const ParameterSpec& spec : parameter_specs(config)) {
    tensors.*spec.member = Tensor::empty(device, shape_of(spec), dtype_of(spec));
  }
  return tensors;
}


// True for the (L, ...) tensors stacked over the layers (every tensor but the embeddings, the final
// norm and the LM head).
bool stacked_per_layer(const ParameterSpec& spec);

// Layer `layer` of a stacked (L, ...) tensor, without the leading dimension; shares storage.
Tensor layer_slice(const Tensor& stacked, std::int64_t layer);
// The same, or an undefined tensor for an undefined one (a tensor this style has not).
Tensor layer_of(const Tensor& stacked, std::int64_t layer);

}  // namespace oomlab::model
