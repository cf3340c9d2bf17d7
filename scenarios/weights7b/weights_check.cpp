#include "scenarios/weights7b/weights_check.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

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

double int8_error_over_bound(const LoadedWeights& weights, const CheckpointSource& f32_source) {
  if (!f32_source.has_data() || f32_source.uniform_dtype() != DType::f32) {
    throw std::invalid_argument(f32_source.label() + ": int8 check needs the mapped f32 checkpoint");
  }
  double worst = 0;
  for (const TensorEntry& entry : f32_source.tensors()) {
    auto scale_it = weights.scales.find(entry.name);
    if (scale_it == weights.scales.end()) continue;
    const Tensor& q = weights.tensors.at(entry.name);
    std::vector<std::int8_t> codes(static_cast<std::size_t>(q.numel()));
    q.copy_to_host(codes.data(), codes.size());
    const std::vector<float> scales = scale_it->second.to_host_f32();
    const auto* x = reinterpret_cast<const float*>(f32_source.data(entry));
    const std::size_t cols = codes.size() / scales.size();
    for (std::size_t i = 0; i < codes.size(); ++i) {
      const float scale = scales[i / cols];
      const double error = std::fabs(static_cast<double>(x[i]) - static_cast<double>(codes[i] * scale));
      const double bound = static_cast<double>(scale) * (0.5 + 1e-4);
      worst = std::max(worst, bound > 0 ? error / bound : (error > 0 ? INFINITY : 0.0));
    }
  }
  return worst;
}

}  // namespace oomlab::scenarios::weights7b
