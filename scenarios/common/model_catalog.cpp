// The transformer presets in `oomlab list --models`: each with its shape, parameters and the
// bytes its weights take as a run allocates them (vocabulary padded to 64 rows; int8 and nf4
// quantise the block projections as quantize_base does, the embeddings and head stay bf16).
#include <string>

#include "harness/runner/model_catalog.hpp"
#include "scenarios/models/transformer/transformer.hpp"

namespace oomlab::scenarios {
namespace {

std::string shape_of(const model::TransformerConfig& c) {
  std::string shape = c.architecture + ", " + std::to_string(c.layers) + " layers, " + std::to_string(c.channels) +
                      " hidden, " + std::to_string(c.heads) + " heads";
  if (c.kv_head_count() != c.heads) shape += " / " + std::to_string(c.kv_head_count()) + " KV";
  shape += ", vocab " + std::to_string(c.vocab);
  if (c.tied_embeddings) shape += " (tied)";
  return shape;
}

std::vector<ModelListing> transformer_presets() {
  std::vector<ModelListing> models;
  for (const std::string& name : model::transformer_preset_names()) {
    const model::TransformerConfig config = model::transformer_preset(name);
    ModelListing listing{
        name, model::transformer_preset_alias_of(name), shape_of(config), config.parameter_count(), {}};
    model::TrainOptions options;
    listing.bytes.emplace_back("f32", model::parameter_bytes(config, options));
    options.precision = model::Precision::bf16;
    listing.bytes.emplace_back("bf16", model::parameter_bytes(config, options));
    options.lora.int8_base = true;
    listing.bytes.emplace_back("int8", model::parameter_bytes(config, options));
    options.lora.int8_base = false;
    options.lora.nf4_base = true;
    listing.bytes.emplace_back("nf4", model::parameter_bytes(config, options));
    models.push_back(listing);
  }
  return models;
}

const ModelCatalogRegistrar kTransformerPresets(transformer_presets);

}  // namespace
}  // namespace oomlab::scenarios
