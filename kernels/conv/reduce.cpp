// Reductions: CPU reference (f64 accumulation), partition plans, and dispatch on the device.
#include "kernels/conv/reduce.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/conv/elementwise_checks.hpp"
#include "kernels/conv/reduce_launch.hpp"
#include "kernels/core/host_values.hpp"

namespace oomlab::ops {

namespace detail {
namespace {

// `n` items cut into `count` pieces of `per_piece` (the last may be shorter): at least
// `min_piece` items a piece, at most `max_pieces` pieces, none empty.
struct Pieces {
  std::int64_t count = 1;
  std::int64_t per_piece = 0;
};
Pieces cut(std::int64_t n, std::int64_t min_piece, std::int64_t max_pieces) {
  Pieces pieces;
  if (n <= 0) return pieces;
  pieces.count = std::clamp<std::int64_t>((n + min_piece - 1) / min_piece, 1, max_pieces);
  pieces.per_piece = (n + pieces.count - 1) / pieces.count;
  pieces.count = (n + pieces.per_piece - 1) / pieces.per_piece;
  return pieces;
}

}  // namespace

// At least 4096 elements per block so small tensors use few blocks; at most 1024 partials.
SumPlan plan_sum(std::int64_t numel) {
  const Pieces pieces = cut(numel, 4096, 1024);
  return {pieces.count, pieces.per_piece};
}

// At least 128 rows per chunk; at most 512 chunks.
ChannelSumPlan plan_channel_sum(std::int64_t rows) {
  const Pieces pieces = cut(rows, 128, 512);
  return {pieces.count, pieces.per_piece};
}

}  // namespace detail

namespace {

void reduce_to_scalar(const Tensor& x, const Tensor& out, bool take_mean, const char* op) {
  check_dtype(op, "x", x, kFloatDtypes);
  detail::check_scalar_output(op, out, x);
  const std::int64_t numel = x.numel();
  Tensor partials = Tensor::empty(x.device(), {detail::plan_sum(numel).count}, DType::f32,
                                  memory::Tag::workspace);
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      double total = 0;
      for (std::int64_t i = 0; i < numel; ++i) total += load_as_float(x.data(), x.dtype(), i);
      store_value(out.data(), DType::f32, 0, take_mean ? total / numel : total);
      return;
    }
    case DeviceKind::cuda: {
#if OOMLAB_WITH_CUDA
      const float scale = !take_mean ? 1.0f
                          : numel > 0 ? 1.0f / static_cast<float>(numel)
                                      : std::numeric_limits<float>::quiet_NaN();
      return detail::sum_cuda(x.dtype(), x.data(), numel, scale, partials.data_as<float>(),
                              out.data_as<float>(), x.device().stream());
#endif
      throw_no_cuda(op);
    }
  }
}

}  // namespace

void sum(const Tensor& x, const Tensor& out) { reduce_to_scalar(x, out, false, "sum"); }

void mean(const Tensor& x, const Tensor& out) { reduce_to_scalar(x, out, true, "mean"); }

void channel_mean(const Tensor& x, const Tensor& out) {
  const char* op = "channel_mean";
  check_dtype(op, "x", x, kFloatDtypes);
  OOMLAB_CHECK(x.ndim() >= 1, op << ": x must have a channel dim, got " << x.describe());
  const std::int64_t channels = x.dim(-1);
  OOMLAB_CHECK(out.defined() && out.dtype() == DType::f32 && out.numel() == channels,
               op << ": out must be f32 with " << channels << " elements for x " << x.describe()
                  << ", got " << (out.defined() ? out.describe() : "undefined"));
  check_same_device(op, {&x, &out});
  const std::int64_t rows = channels > 0 ? x.numel() / channels : 0;
  Tensor partials = Tensor::empty(
      x.device(), {detail::plan_channel_sum(rows).count * std::max<std::int64_t>(channels, 1)},
      DType::f32, memory::Tag::workspace);
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      std::vector<double> totals(static_cast<std::size_t>(channels), 0.0);
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < channels; ++c) {
          totals[c] += load_as_float(x.data(), x.dtype(), r * channels + c);
        }
      }
      for (std::int64_t c = 0; c < channels; ++c) store_value(out.data(), DType::f32, c, totals[c] / rows);
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      detail::channel_sum_cuda(x.dtype(), x.data(), rows, channels,
                               rows > 0 ? 1.0f / static_cast<float>(rows)
                                        : std::numeric_limits<float>::quiet_NaN(),
                               partials.data_as<float>(), DType::f32, out.data(), x.device().stream());
      return;
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
