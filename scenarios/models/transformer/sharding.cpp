#include "scenarios/models/transformer/sharding.hpp"

#include <stdexcept>
#include <string>

#include "kernels/transformer/residual.hpp"

namespace oomlab::model {
namespace {

void check_world(const Tensor& t, int ranks, const char* op) {
  if (ranks > 1 && !t.device().is_dry()) {
    throw std::invalid_argument(std::string(op) + " over " + std::to_string(ranks) +
                                " ranks needs one process per GPU with NCCL, which this build has not: "
                                "simulate the ranks with --device dry, or run gpus=1");
  }
}

}  // namespace

Shape piece_shape(const ParameterSpec& spec) {
  if (!stacked_per_layer(spec)) return spec.shape;
  return Shape(spec.shape.begin() + 1, spec.shape.end());
}

Shape shard_shape(const Shape& piece, int ranks) {
  Shape shard = piece;
  if (ranks > 1) shard[0] = (piece[0] + ranks - 1) / ranks;
  return shard;
}

void all_gather(Tensor& full, const Tensor& shard, int ranks) {
  check_world(full, ranks, "all_gather");
  if (!full.device().is_dry()) full.copy_from(shard);
}

void reduce_scatter_add(Tensor& shard, const Tensor& full, int ranks) {
  check_world(full, ranks, "reduce_scatter");
  if (!full.device().is_dry()) ops::residual_add(shard, shard, full);
}

}  // namespace oomlab::model
