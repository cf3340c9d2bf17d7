// The models a user may name with --set model=... (the transformer presets), for
// `oomlab list --models`. The scenarios register them (a static ModelCatalogRegistrar),
// so the CLI lists them without including it, as it lists the scenarios.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace oomlab {

struct ModelListing {
  std::string name;     // "llama-3-8b"
  std::string same_as;  // an alias's preset ("gpt2-medium" -> "gpt2-350m"); empty for a preset
  std::string shape;    // "LlamaForCausalLM, 32 layers, 4096 hidden, 32 heads / 8 KV, vocab 128256"
  std::uint64_t parameters = 0;
  // Bytes of the weights as a run allocates them, by storage: ("f32", n), ("bf16", n), ...
  std::vector<std::pair<std::string, std::uint64_t>> bytes;
};

using ModelCatalogFn = std::function<std::vector<ModelListing>()>;

void register_model_catalog(ModelCatalogFn catalog);
// Every registered catalog's models, in registration order; empty when none is linked in.
std::vector<ModelListing> model_catalog();

struct ModelCatalogRegistrar {
  explicit ModelCatalogRegistrar(ModelCatalogFn catalog) { register_model_catalog(std::move(catalog)); }
};

}  // namespace oomlab
