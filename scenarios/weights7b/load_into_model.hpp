// The forward-pass check after loading: copy a loaded bf16 weight set into the transformer of
// scenarios/models/transformer and run it on a short prompt.
//
// The checkpoint holds one tensor per Hugging Face name ("model.layers.3.self_attn.k_proj.weight");
// the transformer stacks each kind of layer tensor with a leading L dimension and fuses q, k, v
// into one (L, 3C, C) projection. map_checkpoint_names() says which slice of which stacked
// tensor each checkpoint name fills. The transformer applies no rotary embedding (see
// transformer_config.hpp), so the logits check the load, not LLaMA's exact outputs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/models/transformer/transformer.hpp"
#include "scenarios/weights7b/weight_loader.hpp"

namespace oomlab::scenarios::weights7b {

// The transformer with the checkpoint preset's shape (LLaMA style). The transformer's own
// "llama-tiny"/"llama-small" presets have other sizes, so the shape comes from the checkpoint.
// Grouped-query attention (llama-70b) fuses q, k, v as (H*D + 2*Hkv*D, C).
model::TransformerConfig transformer_config_for(const safetensors::LlamaShape& shape,
                                                std::int64_t max_seq);

struct NamedSlice {
  std::string name;  // checkpoint tensor name
  Tensor target;     // the slice of the model's stacked parameter it fills (shares storage)
};

// Every checkpoint name of the model's config with its destination, in checkpoint order.
std::vector<NamedSlice> map_checkpoint_names(model::Transformer& model);

// Copies each weight into its slice. Checks everything before copying anything: throws
// std::invalid_argument naming the tensor when one is missing, extra, mis-shaped, not bf16, or
// when the set is int8 (quantised weights are not dequantised here).
void copy_weights_into(model::Transformer& model, const LoadedWeights& weights);

// Builds a bf16 transformer for `shape` on `device`, copies `weights` in, runs one forward on
// `prompt` (a single sequence of token ids < vocab) and returns the logits (T, V) as f32: bf16
// widens exactly, so equal bits in give equal floats out.
std::vector<float> forward_logits(Device& device, const safetensors::LlamaShape& shape,
                                  const LoadedWeights& weights,
                                  const std::vector<std::int32_t>& prompt);

}  // namespace oomlab::scenarios::weights7b
