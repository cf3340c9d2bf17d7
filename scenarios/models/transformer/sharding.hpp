// ZeRO-3 / FSDP sharding of the transformer's parameters (issue 22): every parameter piece (a
// layer's slice of a stacked tensor, or an unstacked tensor) is split by rows over N ranks:
// ceil(rows / N) rows each, the last rank taking what remains. Before a layer's forward (and again
// before its backward) its pieces are all-gathered; its gradients are reduce-scattered into the
// shard's gradient (averaged over the ranks: each rank's loss is the mean over its own batch).
//
// Where the ranks meet: on dry and host, the ranks of one process (communicator.hpp); dry moves
// nothing (each rank's memory is its own allocator's), host copies and sums through host memory
// (the sum in f32 in rank order). On cuda, one process per GPU through NCCL (nccl_group.hpp). On
// every backend the reduce-scatter delivers into a buffer of the shard's size that is then added,
// as NCCL needs, so dry predicts the GPU's peak.
#pragma once
#include <cstdint>

#include "kernels/core/tensor.hpp"
#include "scenarios/models/transformer/communicator.hpp"
#include "scenarios/models/transformer/parameter_tensors.hpp"

namespace oomlab::model {

// A piece's shape: the spec's shape without the leading L of a stacked tensor.
Shape piece_shape(const ParameterSpec& spec);

struct RowRange {
  std::int64_t begin = 0, count = 0;
};
// The rows of `rows` that `rank` of `ranks` holds.
RowRange shard_rows(std::int64_t rows, int rank, int ranks);
// That rank's shard of a piece (the piece itself with one rank).
Shape shard_shape(const Shape& piece, int rank, int ranks);

// full = every rank's shard, in rank order.
void all_gather(Tensor& full, const Tensor& shard, const ShardGroup& group);
// shard += (sum over ranks of their `full`) / ranks, this rank's rows of it.
void reduce_scatter_mean_add(Tensor& shard, const Tensor& full, const ShardGroup& group);
// norm (1) f32, each rank's norm of its shards: becomes sqrt(sum over ranks of norm^2).
void all_reduce_norm(Tensor& norm, const ShardGroup& group);

}  // namespace oomlab::model
