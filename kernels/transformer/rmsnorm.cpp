// RMSNorm: CPU reference (f64 accumulation) and dispatch.
#include "kernels/transformer/rmsnorm.hpp"

#include <cmath>

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::ops {

namespace {

void check_common(const char* op, const Tensor& x, const Tensor& weight, const Tensor& rstd) {
  check_dtype(op, "x", x, kFloatDtypes);
  OOMLAB_CHECK(x.ndim() >= 1, op << ": x " << x.describe() << " needs a channel dimension");
  check_shape(op, "weight", weight, {x.dim(-1)});
  check_same_dtype(op, weight, x);
  check_shape(op, "rstd", rstd, {rows_of(x)});
  check_dtype(op, "rstd", rstd, {DType::f32});
}

}  // namespace

void rmsnorm_forward(Tensor& out, Tensor& rstd, const Tensor& x, const Tensor& weight, float eps) {
  const char* op = "rmsnorm_forward";
  check_common(op, x, weight, rstd);
  check_shape(op, "out", out, x.shape());
  check_same_dtype(op, out, x);
  check_same_device(op, {&out, &rstd, &x, &weight});
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      std::size_t rows = static_cast<std::size_t>(rows_of(x)), cols = static_cast<std::size_t>(x.dim(-1));
      for (std::size_t r = 0; r < rows; ++r) {
        double sum_sq = 0;
        for (std::size_t c = 0; c < cols; ++c) {
          double v = load_as_float(x.data(), x.dtype(), r * cols + c);
          sum_sq += v * v;
        }
        double s = 1.0 / std::sqrt(sum_sq / double(cols) + eps);
        for (std::size_t c = 0; c < cols; ++c) {
          double v = load_as_float(x.data(), x.dtype(), r * cols + c);
          store_value(out.data(), out.dtype(), r * cols + c,
                      v * s * load_as_float(weight.data(), weight.dtype(), c));
        }
        rstd.data_as<float>()[r] = static_cast<float>(s);
      }
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::rmsnorm_forward(out, rstd, x, weight, eps, x.device().stream());
#endif
      throw_no_cuda(op);
  }
}

void rmsnorm_backward(Tensor& dx, Tensor& dweight, const Tensor& dout, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const Tensor& residual) {
  const char* op = "rmsnorm_backward";
  check_common(op, x, weight, rstd);
  check_shape(op, "dout", dout, x.shape());
  check_same_dtype(op, dout, x);
  check_shape(op, "dx", dx, x.shape());
  check_same_dtype(op, dx, x);
  check_shape(op, "dweight", dweight, weight.shape());
  check_dtype(op, "dweight", dweight, {DType::f32});
  check_residual(op, residual, x, dx);
  check_same_device(op, {&dx, &dweight, &dout, &x, &weight, &rstd, &residual});
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      std::size_t rows = static_cast<std::size_t>(rows_of(x)), cols = static_cast<std::size_t>(x.dim(-1));
      for (std::size_t r = 0; r < rows; ++r) {
        double s = rstd.data_as<float>()[r];
        double mean_g_xhat = 0;
        for (std::size_t c = 0; c < cols; ++c) {
          std::size_t i = r * cols + c;
          double xhat = load_as_float(x.data(), x.dtype(), i) * s;
          mean_g_xhat += double(load_as_float(dout.data(), dout.dtype(), i)) *
                         load_as_float(weight.data(), weight.dtype(), c) * xhat;
        }
        mean_g_xhat /= double(cols);
        for (std::size_t c = 0; c < cols; ++c) {
          std::size_t i = r * cols + c;
          double xhat = load_as_float(x.data(), x.dtype(), i) * s;
          double d = load_as_float(dout.data(), dout.dtype(), i);
          double g = d * load_as_float(weight.data(), weight.dtype(), c);
          const double skip = residual.defined() ? load_as_float(residual.data(), residual.dtype(), i) : 0.0;
          store_value(dx.data(), dx.dtype(), i, s * (g - xhat * mean_g_xhat) + skip);
          dweight.data_as<float>()[c] += static_cast<float>(d * xhat);
        }
      }
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::rmsnorm_backward(dx, dweight, dout, x, weight, rstd, residual, x.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
