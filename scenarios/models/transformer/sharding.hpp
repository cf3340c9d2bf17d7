// ZeRO-3 / FSDP sharding of the transformer's parameters (issue 22): every parameter piece (a
// layer's slice of a stacked tensor, or an unstacked tensor) is split by rows over N ranks, the
// rows divided evenly and the last rank taking the remainder; rank 0, whose shard is the largest,
// is the one this process runs. Before a layer's forward (and again before its backward) its
// pieces are all-gathered; its gradients are reduce-scattered into the shard's gradient.
//
// The collectives here are rank 0's view of them. On dry they allocate nothing of their own and
// move nothing (each rank's memory is its own allocator's); with one rank they are the copy and the
// add that NCCL would do in a world of one, on host and cuda. More ranks than one outside dry need
// one process per GPU with NCCL, not built yet: they throw std::invalid_argument.
#pragma once
#include <cstdint>

#include "kernels/core/tensor.hpp"
#include "scenarios/models/transformer/parameter_tensors.hpp"

namespace oomlab::model {

// A piece's shape: the spec's shape without the leading L of a stacked tensor.
Shape piece_shape(const ParameterSpec& spec);
// Rank 0's shard of a piece: ceil(rows / ranks) rows (all of them when ranks <= 1).
Shape shard_shape(const Shape& piece, int ranks);

// full = the concatenation of every rank's shard (rank 0's first).
void all_gather(Tensor& full, const Tensor& shard, int ranks);
// shard += this rank's rows of the sum over ranks of `full` (the gradient's reduce-scatter,
// accumulating as micro-batches do).
void reduce_scatter_add(Tensor& shard, const Tensor& full, int ranks);

}  // namespace oomlab::model
