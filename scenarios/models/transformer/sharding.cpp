#include "scenarios/models/transformer/sharding.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/core/check.hpp"
#include "kernels/core/host_values.hpp"
#include "kernels/core/residual.hpp"
#include "scenarios/models/transformer/nccl_group.hpp"

namespace oomlab::model {
namespace {

// More than one rank: dry (nothing moves) or host (through host memory); cuda needs NCCL.
bool moves_through_host(const Tensor& t, const ShardGroup& group, const char* op) {
  if (group.ranks <= 1 || t.device().is_dry()) return false;
  if (t.device().kind() != DeviceKind::host) {
    throw std::invalid_argument(std::string(op) + " over " + std::to_string(group.ranks) +
                                " ranks in one process on a GPU: a GPU run's ranks are processes joined by NCCL; "
                                "simulate the ranks with --device dry (or host), or run gpus=1");
  }
  return true;
}

// A collective's shape: publish this rank's tensor, wait for every rank's, `work` (reading them),
// and wait again so that no slot is reused while another rank still reads it.
template <class Work>
void exchange(const ShardGroup& group, const Tensor* mine, Work work) {
  OOMLAB_CHECK(group.communicator != nullptr, "a collective over " << group.ranks << " ranks without a communicator");
  group.communicator->slot(group.rank) = mine;
  group.communicator->barrier();
  work();
  group.communicator->barrier();
}

const Tensor& shared(const ShardGroup& group, int rank) {
  return *static_cast<const Tensor*>(group.communicator->slot(rank));
}

}  // namespace

Shape piece_shape(const ParameterSpec& spec) {
  if (!stacked_per_layer(spec)) return spec.shape;
  return Shape(spec.shape.begin() + 1, spec.shape.end());
}

RowRange shard_rows(std::int64_t rows, int rank, int ranks) {
  if (ranks <= 1) return {0, rows};
  const std::int64_t each = (rows + ranks - 1) / ranks;
  const std::int64_t begin = std::min(rows, each * rank);
  return {begin, std::min(rows, begin + each) - begin};
}

Shape shard_shape(const Shape& piece, int rank, int ranks) {
  Shape shard = piece;
  shard[0] = shard_rows(piece[0], rank, ranks).count;
  return shard;
}

void all_gather(Tensor& full, const Tensor& shard, const ShardGroup& group) {
  if (group.nccl) {
    group.nccl->all_gather_rows(full, shard);
    return;
  }
  if (group.ranks <= 1) {
    if (!full.device().is_dry()) full.copy_from(shard);
    return;
  }
  exchange(group, &shard, [&] {
    if (!moves_through_host(full, group, "all_gather")) return;
    const std::size_t bytes_per_row = full.nbytes() / static_cast<std::size_t>(full.dim(0));
    for (int r = 0; r < group.ranks; ++r) {
      const Tensor& theirs = shared(group, r);
      const RowRange rows = shard_rows(full.dim(0), r, group.ranks);
      std::memcpy(static_cast<char*>(full.data()) + static_cast<std::size_t>(rows.begin) * bytes_per_row,
                  theirs.data(), static_cast<std::size_t>(rows.count) * bytes_per_row);
    }
  });
}

namespace {

// received = this rank's rows of the mean over ranks of their `full`.
void reduce_mean_rows(Tensor& received, const Tensor& full, const ShardGroup& group) {
  if (group.nccl) {
    group.nccl->reduce_mean_rows(received, full);
    return;
  }
  if (group.ranks <= 1) {
    if (!full.device().is_dry()) received.copy_from(full);
    return;
  }
  exchange(group, &full, [&] {
    if (!moves_through_host(full, group, "reduce_scatter")) return;
    const RowRange rows = shard_rows(full.dim(0), group.rank, group.ranks);
    const std::size_t per_row = static_cast<std::size_t>(full.numel() / full.dim(0));
    const std::size_t first = static_cast<std::size_t>(rows.begin) * per_row;
    for (std::size_t i = 0; i < static_cast<std::size_t>(rows.count) * per_row; ++i) {
      float sum = 0;  // f32, in rank order: the same bits on every run
      for (int r = 0; r < group.ranks; ++r) sum += load_as_float(shared(group, r).data(), full.dtype(), first + i);
      store_value(received.data(), received.dtype(), i, sum / static_cast<float>(group.ranks));
    }
  });
}

}  // namespace

void reduce_scatter_mean_add(Tensor& shard, const Tensor& full, const ShardGroup& group) {
  // NCCL reduces into a buffer of the shard's size, then it is added: every backend holds one, so
  // that dry predicts the GPU's peak.
  Tensor received = Tensor::empty(shard.device(), shard.shape(), full.dtype());
  reduce_mean_rows(received, full, group);
  if (!shard.device().is_dry()) ops::residual_add(shard, shard, received);
}

void all_reduce_norm(Tensor& norm, const ShardGroup& group) {
  if (group.nccl) {  // one f32 a step: squared and rooted on the host, summed by NCCL
    float n = 0;
    norm.copy_to_host(&n, sizeof n);
    n *= n;
    norm.copy_from_host(&n, sizeof n);
    group.nccl->all_reduce_sum(norm);
    norm.copy_to_host(&n, sizeof n);
    n = std::sqrt(n);
    norm.copy_from_host(&n, sizeof n);
    return;
  }
  if (group.ranks <= 1 || norm.device().is_dry()) return;
  double squares = 0;
  exchange(group, &norm, [&] {
    if (!moves_through_host(norm, group, "all_reduce")) return;
    for (int r = 0; r < group.ranks; ++r) {
      const double n = load_as_float(shared(group, r).data(), DType::f32, 0);
      squares += n * n;
    }
  });
  store_value(norm.data(), DType::f32, 0, std::sqrt(squares));  // every rank has read every norm
}

}  // namespace oomlab::model
