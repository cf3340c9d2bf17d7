#include "scenarios/weights7b/weights_check.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/core/host_values.hpp"

namespace oomlab::scenarios::weights7b {
namespace {

void fnv1a(std::uint64_t& hash, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  for (std::size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
}

}  // namespace

std::uint64_t weights_digest(const LoadedWeights& weights) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  std::vector<std::uint8_t> bytes;
  for (const auto* map : {&weights.tensors, &weights.scales}) {
    for (const auto& [name, tensor] : *map) {
      fnv1a(hash, name.data(), name.size());
      bytes.resize(tensor.nbytes());
      tensor.copy_to_host(bytes.data(), bytes.size());
      fnv1a(hash, bytes.data(), bytes.size());
    }
  }
  return hash;
}

double int8_error_over_bound(const LoadedWeights& weights, const CheckpointSource& source) {
  if (!source.has_data() || !is_floating(source.uniform_dtype())) {
    throw std::invalid_argument(source.label() + ": int8 check needs the mapped float checkpoint");
  }
  const DType file_dtype = source.uniform_dtype();
  double worst = 0;
  for (const TensorEntry& entry : source.tensors()) {
    auto scale_it = weights.scales.find(entry.name);
    if (scale_it == weights.scales.end()) continue;
    const Tensor& q = weights.tensors.at(entry.name);
    std::vector<std::int8_t> codes(static_cast<std::size_t>(q.numel()));
    q.copy_to_host(codes.data(), codes.size());
    const std::vector<float> scales = scale_it->second.to_host_f32();
    const std::uint8_t* x = source.data(entry);
    if (codes.empty()) continue;  // a zero-element matrix: nothing quantised, no row length
    const std::size_t cols = codes.size() / scales.size();
    for (std::size_t i = 0; i < codes.size(); ++i) {
      const float scale = scales[i / cols];
      const double value = load_as_float(x, file_dtype, i);
      const double error = std::fabs(value - static_cast<double>(codes[i] * scale));
      const double bound = static_cast<double>(scale) * (0.5 + 1e-4);
      worst = std::max(worst, bound > 0 ? error / bound : (error > 0 ? INFINITY : 0.0));
    }
  }
  return worst;
}

}  // namespace oomlab::scenarios::weights7b
