#include "harness/runner/model_catalog.hpp"

namespace oomlab {
namespace {

std::vector<ModelCatalogFn>& catalogs() {
  static std::vector<ModelCatalogFn> all;  // filled by static registrars before main
  return all;
}

}  // namespace

void register_model_catalog(ModelCatalogFn catalog) { catalogs().push_back(std::move(catalog)); }

std::vector<ModelListing> model_catalog() {
  std::vector<ModelListing> models;
  for (const ModelCatalogFn& catalog : catalogs()) {
    std::vector<ModelListing> some = catalog();
    models.insert(models.end(), some.begin(), some.end());
  }
  return models;
}

}  // namespace oomlab
