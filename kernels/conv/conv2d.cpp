// conv2d: shape rules, CPU reference (f64 accumulation) and dispatch on the device.
#include "kernels/conv/conv2d.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/conv/conv2d_launch.hpp"
#include "kernels/conv/leaky_relu.hpp"
#include "kernels/conv/reduce_launch.hpp"
#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"
#include "kernels/core/residual.hpp"

namespace oomlab::ops {

namespace detail {

WgradPlan plan_wgrad(const Conv2dGeometry& g, bool with_bias) {
  // Nominal 128 x 64 output tiles of dw^T (r*s*c x k); aim for ~1024 blocks, at most 64 splits,
  // at least 256 rows of dy per split. Shape-only, so the workspace is the same on every device.
  const std::int64_t rows = g.n * g.p * g.q;
  const std::int64_t tiles = ((g.r * g.s * g.c + 127) / 128) * ((g.k + 63) / 64);
  const std::int64_t wanted = std::clamp<std::int64_t>((1024 + tiles - 1) / tiles, 1, 64);
  WgradPlan plan;
  plan.rows_per_split = std::max<std::int64_t>(((rows + wanted - 1) / wanted + 31) / 32 * 32, 256);
  plan.splits = std::max<std::int64_t>((rows + plan.rows_per_split - 1) / plan.rows_per_split, 1);
  plan.weight_partial_floats = plan.splits * g.k * g.r * g.s * g.c;
  plan.bias_partial_floats = with_bias ? plan_channel_sum(rows).count * g.k : 0;
  return plan;
}

}  // namespace detail

namespace {

constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

detail::Conv2dGeometry geometry_of(const Shape& x, const Shape& w, Conv2dParams params) {
  OOMLAB_CHECK(x.size() == 4, "conv2d: x must be NHWC (4 dims), got " << shape_string(x));
  OOMLAB_CHECK(w.size() == 4, "conv2d: w must be KRSC (4 dims), got " << shape_string(w));
  OOMLAB_CHECK(params.stride >= 1 && params.padding >= 0,
               "conv2d: stride must be >= 1 and padding >= 0, got stride " << params.stride
                                                                          << " padding " << params.padding);
  for (std::int64_t extent : x) OOMLAB_CHECK(extent >= 1, "conv2d: empty x " << shape_string(x));
  for (std::int64_t extent : w) OOMLAB_CHECK(extent >= 1, "conv2d: empty w " << shape_string(w));
  OOMLAB_CHECK(x[3] == w[3], "conv2d: x " << shape_string(x) << " has " << x[3]
                                           << " channels but w " << shape_string(w) << " expects " << w[3]);
  detail::Conv2dGeometry g{};
  g.n = x[0], g.h = x[1], g.w = x[2], g.c = x[3];
  g.k = w[0], g.r = w[1], g.s = w[2];
  g.stride = params.stride;
  g.pad = params.padding;
  OOMLAB_CHECK(g.h + 2 * g.pad >= g.r && g.w + 2 * g.pad >= g.s,
               "conv2d: kernel " << g.r << "x" << g.s << " larger than the padded input of x "
                                 << shape_string(x) << " with padding " << g.pad);
  g.p = (g.h + 2 * g.pad - g.r) / g.stride + 1;
  g.q = (g.w + 2 * g.pad - g.s) / g.stride + 1;
  // The kernels index GEMM rows and columns with 32-bit integers (element offsets are 64-bit).
  for (std::int64_t extent : {g.n * g.p * g.q, g.n * g.h * g.w, g.r * g.s * g.c, g.r * g.s * g.k}) {
    OOMLAB_CHECK(extent <= kInt32Max, "conv2d: x " << shape_string(x) << " with w " << shape_string(w)
                                                   << " is too large for 32-bit GEMM indices");
  }
  return g;
}

// The input-side activation (x or dx), the weight (w or dw) and the output side (y or dy): one
// float dtype, one device.
void check_conv_tensors(const Tensor& activation, const Tensor& w, const Tensor& other,
                        const char* op) {
  check_dtype(op, "activation", activation, kFloatDtypes);
  check_defined(op, "weight", w);
  check_defined(op, "output/gradient", other);
  check_same_dtype(op, activation, w);
  check_same_dtype(op, activation, other);
  check_same_device(op, {&activation, &w, &other});
}

void check_bias(const Tensor& bias, const Tensor& w, const char* op) {
  if (!bias.defined()) return;
  check_same_dtype(op, bias, w);
  check_same_device(op, {&bias, &w});
  OOMLAB_CHECK(bias.ndim() == 1 && bias.dim(0) == w.dim(0),
               op << ": bias " << bias.describe() << " should have shape (" << w.dim(0) << ")");
}

void check_output_shape(const Tensor& t, const Shape& expected, const char* op, const char* name) {
  OOMLAB_CHECK(t.shape() == expected, op << ": " << name << " " << t.describe()
                                         << " should have shape " << shape_string(expected));
}

// The epilogue's tensors are laid out like the output it finishes.
void check_epilogue(const ConvEpilogue& epilogue, const Tensor& out, bool backward, const char* op) {
  for (const Tensor* t : {&epilogue.addend, &epilogue.activation_output}) {
    if (!t->defined()) continue;
    check_same_dtype(op, *t, out);
    check_same_device(op, {t, &out});
    OOMLAB_CHECK(t->shape() == out.shape(), op << ": epilogue tensor " << t->describe()
                                               << " should have the output's shape " << shape_string(out.shape()));
  }
  if (epilogue.activation) {
    OOMLAB_CHECK(epilogue.slope >= 0.0f, op << ": epilogue slope must be >= 0 (the gradient reads the activation's "
                                               "sign from its output), got " << epilogue.slope);
  }
  if (backward) {
    OOMLAB_CHECK(
        epilogue.activation == epilogue.activation_output.defined(),
        op << ": an epilogue activation needs activation_output (the forward's activated output), and only then");
  } else {
    OOMLAB_CHECK(!epilogue.activation_output.defined(), op << ": the forward epilogue takes no activation_output");
  }
}

// On host the epilogue is the separate ops themselves: their references define what it computes.
void apply_epilogue_on_host(const ConvEpilogue& epilogue, const Tensor& out, bool backward) {
  Tensor result = out;
  if (epilogue.addend.defined()) residual_add(result, result, epilogue.addend);
  if (!epilogue.activation) return;
  if (backward) {
    leaky_relu_backward(epilogue.activation_output, result, result, epilogue.slope);
  } else {
    leaky_relu_forward(result, result, epilogue.slope);
  }
}

#if OOMLAB_WITH_CUDA
detail::EpilogueArgs epilogue_args(const ConvEpilogue& epilogue) {
  detail::EpilogueArgs args;
  args.addend = epilogue.addend.defined() ? epilogue.addend.data() : nullptr;
  args.activation_output = epilogue.activation_output.defined() ? epilogue.activation_output.data() : nullptr;
  args.activation = epilogue.activation;
  args.slope = epilogue.slope;
  return args;
}
#endif

std::vector<double> host_doubles(const Tensor& t) {
  std::vector<double> values(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = load_as_float(t.data(), t.dtype(), i);
  return values;
}

void store_doubles(const Tensor& t, const std::vector<double>& values) {
  for (std::size_t i = 0; i < values.size(); ++i) store_value(t.data(), t.dtype(), i, values[i]);
}

// Calls visit(x_index, y_index, w_index, channels) for every (n, p, q, k, r, s) whose input pixel
// lies inside the image (padding contributes zeros); the three indices point at channel 0 of
// x[n, h, w, :], y[n, p, q, k] and w[k, r, s, :]. The three references share this one loop.
template <class Visit>
void for_each_tap(const detail::Conv2dGeometry& g, Visit&& visit) {
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t p = 0; p < g.p; ++p)
      for (std::int64_t q = 0; q < g.q; ++q)
        for (std::int64_t k = 0; k < g.k; ++k)
          for (std::int64_t r = 0; r < g.r; ++r) {
            const std::int64_t h = p * g.stride - g.pad + r;
            if (h < 0 || h >= g.h) continue;
            for (std::int64_t s = 0; s < g.s; ++s) {
              const std::int64_t w = q * g.stride - g.pad + s;
              if (w < 0 || w >= g.w) continue;
              visit(((n * g.h + h) * g.w + w) * g.c, ((n * g.p + p) * g.q + q) * g.k + k,
                    ((k * g.r + r) * g.s + s) * g.c);
            }
          }
}

}  // namespace

Shape conv2d_output_shape(const Shape& x, const Shape& w, Conv2dParams params) {
  const detail::Conv2dGeometry g = geometry_of(x, w, params);
  return {g.n, g.p, g.q, g.k};
}

std::size_t conv2d_backward_weight_workspace_bytes(const Shape& x, const Shape& w,
                                                   Conv2dParams params, bool with_bias) {
  const detail::WgradPlan plan = detail::plan_wgrad(geometry_of(x, w, params), with_bias);
  return static_cast<std::size_t>(plan.weight_partial_floats + plan.bias_partial_floats) * sizeof(float);
}

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                    Conv2dParams params, const ConvEpilogue& epilogue) {
  const char* op = "conv2d_forward";
  check_conv_tensors(x, w, y, op);
  check_bias(bias, w, op);
  const detail::Conv2dGeometry g = geometry_of(x.shape(), w.shape(), params);
  check_output_shape(y, {g.n, g.p, g.q, g.k}, op, "y");
  check_epilogue(epilogue, y, /*backward=*/false, op);
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      const std::vector<double> xv = host_doubles(x), wv = host_doubles(w);
      std::vector<double> yv(static_cast<std::size_t>(y.numel()), 0.0);
      if (bias.defined()) {
        const std::vector<double> bv = host_doubles(bias);
        for (std::size_t i = 0; i < yv.size(); ++i) yv[i] = bv[i % g.k];
      }
      for_each_tap(g, [&](std::int64_t xi, std::int64_t yi, std::int64_t wi) {
        double acc = 0;
        for (std::int64_t c = 0; c < g.c; ++c) acc += xv[xi + c] * wv[wi + c];
        yv[yi] += acc;
      });
      store_doubles(y, yv);
      apply_epilogue_on_host(epilogue, y, /*backward=*/false);
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      detail::conv2d_forward_cuda(x.dtype(), g, x.data(), w.data(), bias.defined() ? bias.data() : nullptr,
                                  y.data(), epilogue_args(epilogue), x.device().stream());
      return;
#endif
      throw_no_cuda(op);
  }
}

void conv2d_backward_data(const Tensor& dy, const Tensor& w, const Tensor& dx, Conv2dParams params,
                          const ConvEpilogue& epilogue) {
  const char* op = "conv2d_backward_data";
  check_conv_tensors(dx, w, dy, op);
  const detail::Conv2dGeometry g = geometry_of(dx.shape(), w.shape(), params);
  check_output_shape(dy, {g.n, g.p, g.q, g.k}, op, "dy");
  check_epilogue(epilogue, dx, /*backward=*/true, op);
  Tensor w_transposed = Tensor::empty(dy.device(), w.shape(), w.dtype(), memory::Tag::workspace);
  switch (dy.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      const std::vector<double> dyv = host_doubles(dy), wv = host_doubles(w);
      std::vector<double> dxv(static_cast<std::size_t>(dx.numel()), 0.0);
      for_each_tap(g, [&](std::int64_t xi, std::int64_t yi, std::int64_t wi) {
        const double grad = dyv[yi];
        for (std::int64_t c = 0; c < g.c; ++c) dxv[xi + c] += grad * wv[wi + c];
      });
      store_doubles(dx, dxv);
      apply_epilogue_on_host(epilogue, dx, /*backward=*/true);
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      detail::conv2d_backward_data_cuda(dy.dtype(), g, dy.data(), w.data(), w_transposed.data(), dx.data(),
                                        epilogue_args(epilogue), dy.device().stream());
      return;
#endif
      throw_no_cuda(op);
  }
}

void conv2d_backward_weight(const Tensor& x, const Tensor& dy, const Tensor& dw,
                            const Tensor& dbias, Conv2dParams params) {
  const char* op = "conv2d_backward_weight";
  check_conv_tensors(x, dw, dy, op);
  check_bias(dbias, dw, op);
  const detail::Conv2dGeometry g = geometry_of(x.shape(), dw.shape(), params);
  check_output_shape(dy, {g.n, g.p, g.q, g.k}, op, "dy");
  const detail::WgradPlan plan = detail::plan_wgrad(g, dbias.defined());
  Tensor workspace = Tensor::empty(x.device(), {plan.weight_partial_floats + plan.bias_partial_floats},
                                   DType::f32, memory::Tag::workspace);
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      const std::vector<double> xv = host_doubles(x), dyv = host_doubles(dy);
      std::vector<double> dwv(static_cast<std::size_t>(dw.numel()), 0.0);
      for_each_tap(g, [&](std::int64_t xi, std::int64_t yi, std::int64_t wi) {
        const double grad = dyv[yi];
        for (std::int64_t c = 0; c < g.c; ++c) dwv[wi + c] += grad * xv[xi + c];
      });
      store_doubles(dw, dwv);
      if (dbias.defined()) {
        std::vector<double> dbv(static_cast<std::size_t>(g.k), 0.0);
        for (std::size_t i = 0; i < dyv.size(); ++i) dbv[i % g.k] += dyv[i];
        store_doubles(dbias, dbv);
      }
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      detail::conv2d_backward_weight_cuda(x.dtype(), g, x.data(), dy.data(), dw.data(),
                                          dbias.defined() ? dbias.data() : nullptr,
                                          workspace.data_as<float>(), x.device().stream());
      return;
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
