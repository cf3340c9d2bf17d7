// Matmul: shape resolution, CPU reference (f64 accumulation) and dispatch; the backward as two
// matmuls and a column sum.
#include "kernels/transformer/matmul.hpp"

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"
#include "kernels/transformer/gelu_math.hpp"

namespace oomlab::ops {

namespace {

cuda::MatmulShape resolve_shape(const char* op, const Tensor& c, const Tensor& a, const Tensor& b,
                                const MatmulOptions& options) {
  check_dtype(op, "a", a, kFloatDtypes);
  check_same_dtype(op, b, a);
  check_same_dtype(op, c, a);
  cuda::MatmulShape shape{1, 0, 0, 0};
  if (b.ndim() == 2) {
    std::int64_t k = options.transpose_b ? b.dim(1) : b.dim(0);
    shape.n = options.transpose_b ? b.dim(0) : b.dim(1);
    if (options.transpose_a) {
      OOMLAB_CHECK(a.ndim() == 2, op << ": a transposed " << a.describe() << " must be 2-D");
      shape.k = a.dim(0);
      shape.m = a.dim(1);
      check_shape(op, "c", c, {shape.m, shape.n});
    } else {
      OOMLAB_CHECK(a.ndim() >= 2, op << ": a " << a.describe() << " must be at least 2-D");
      shape.k = a.dim(-1);
      shape.m = rows_of(a);
      Shape c_shape = a.shape();
      c_shape.back() = shape.n;
      check_shape(op, "c", c, c_shape);
    }
    OOMLAB_CHECK(shape.k == k, op << ": inner dimensions differ: " << a.describe() << " and "
                                  << b.describe());
  } else {
    OOMLAB_CHECK(b.ndim() == 3 && a.ndim() == 3 && a.dim(0) == b.dim(0),
                 op << ": batched matmul needs a (batch, ., .) and b (batch, ., .): " << a.describe()
                    << ", " << b.describe());
    shape.batch = a.dim(0);
    shape.m = options.transpose_a ? a.dim(2) : a.dim(1);
    shape.k = options.transpose_a ? a.dim(1) : a.dim(2);
    std::int64_t k = options.transpose_b ? b.dim(2) : b.dim(1);
    shape.n = options.transpose_b ? b.dim(1) : b.dim(2);
    OOMLAB_CHECK(shape.k == k, op << ": inner dimensions differ: " << a.describe() << " and "
                                  << b.describe());
    check_shape(op, "c", c, {shape.batch, shape.m, shape.n});
  }
  return shape;
}

// Element (row, col) of op(X) for X stored row-major as rows x cols before the transpose.
float load_op(const Tensor& x, std::size_t base, bool transpose, std::int64_t row, std::int64_t col,
              std::int64_t stored_cols) {
  std::size_t i = transpose ? static_cast<std::size_t>(col * stored_cols + row)
                            : static_cast<std::size_t>(row * stored_cols + col);
  return load_as_float(x.data(), x.dtype(), base + i);
}

void matmul_reference(Tensor& c, const Tensor& a, const Tensor& b, const Tensor& bias,
                      const MatmulOptions& options, const Tensor& residual, const cuda::MatmulShape& s) {
  std::int64_t a_cols = options.transpose_a ? s.m : s.k;
  std::int64_t b_cols = options.transpose_b ? s.k : s.n;
  bool b_batched = b.ndim() == 3;
  for (std::int64_t batch = 0; batch < s.batch; ++batch) {
    std::size_t a_base = static_cast<std::size_t>(batch * s.m * s.k);
    std::size_t b_base = b_batched ? static_cast<std::size_t>(batch * s.k * s.n) : 0;
    std::size_t c_base = static_cast<std::size_t>(batch * s.m * s.n);
    for (std::int64_t i = 0; i < s.m; ++i) {
      for (std::int64_t j = 0; j < s.n; ++j) {
        double sum = 0;
        for (std::int64_t p = 0; p < s.k; ++p) {
          sum += double(load_op(a, a_base, options.transpose_a, i, p, a_cols)) *
                 load_op(b, b_base, options.transpose_b, p, j, b_cols);
        }
        std::size_t out = c_base + static_cast<std::size_t>(i * s.n + j);
        if (options.accumulate) sum += load_as_float(c.data(), c.dtype(), out);
        if (residual.defined()) sum += load_as_float(residual.data(), residual.dtype(), out);
        if (bias.defined()) sum += load_as_float(bias.data(), bias.dtype(), static_cast<std::size_t>(j));
        float value = static_cast<float>(sum);
        store_value(c.data(), c.dtype(), out, options.gelu ? gelu_value(value) : value);
      }
    }
  }
}

}  // namespace

void matmul(Tensor& c, const Tensor& a, const Tensor& b, const Tensor& bias,
            const MatmulOptions& options, const Tensor& residual) {
  const char* op = "matmul";
  cuda::MatmulShape shape = resolve_shape(op, c, a, b, options);
  if (bias.defined()) {
    check_shape(op, "bias", bias, {shape.n});
    check_same_dtype(op, bias, a);
  }
  check_residual(op, residual, c, c);
  OOMLAB_CHECK(!(options.accumulate && residual.defined()), op << ": accumulate and a residual together");
  check_same_device(op, {&c, &a, &b, &bias, &residual});
  Device& device = a.device();
  // Same request on every backend (see the header).
  Tensor workspace = Tensor::empty(device, {static_cast<std::int64_t>(kMatmulWorkspaceBytes)},
                                   DType::i8, memory::Tag::workspace);
  switch (device.kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: return matmul_reference(c, a, b, bias, options, residual, shape);
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::matmul(c, a, b, bias, options, residual, shape, workspace, device.stream());
#endif
      throw_no_cuda(op);
  }
}

void matmul_backward(Tensor& da, Tensor& db, Tensor& dbias, const Tensor& dc, const Tensor& a,
                     const Tensor& b, const MatmulOptions& options) {
  const char* op = "matmul_backward";
  OOMLAB_CHECK(!options.gelu && !options.accumulate,
               op << ": the GELU epilogue and accumulate have no backward here; run gelu_backward on "
                     "a separately kept pre-activation");
  cuda::MatmulShape shape = resolve_shape(op, dc, a, b, options);
  Tensor none;
  if (da.defined()) {
    check_shape(op, "da", da, a.shape());
    // C = op_a(A) op_b(B): dA = dC op_b(B)^T, or op_b(B) dC^T when A is stored transposed.
    if (!options.transpose_a) {
      matmul(da, dc, b, none, {false, !options.transpose_b, false, false});
    } else {
      matmul(da, b, dc, none, {options.transpose_b, true, false, false});
    }
  }
  if (db.defined()) {
    check_shape(op, "db", db, b.shape());
    // dB = op_a(A)^T dC, or dC^T op_a(A) when B is stored transposed; accumulated.
    if (b.ndim() == 2 && a.ndim() > 2 && !options.transpose_a) {
      Tensor a2 = a.view({shape.m, shape.k});
      Tensor dc2 = dc.view({shape.m, shape.n});
      if (!options.transpose_b) matmul(db, a2, dc2, none, {true, false, true, false});
      else matmul(db, dc2, a2, none, {true, false, true, false});
    } else if (!options.transpose_b) {
      matmul(db, a, dc, none, {!options.transpose_a, false, true, false});
    } else {
      matmul(db, dc, a, none, {true, options.transpose_a, true, false});
    }
  }
  if (dbias.defined()) {
    check_shape(op, "dbias", dbias, {shape.n});
    check_dtype(op, "dbias", dbias, {DType::f32});
    check_same_device(op, {&dbias, &dc});
    switch (dc.device().kind()) {
      case DeviceKind::dry: break;
      case DeviceKind::host: {
        std::size_t rows = static_cast<std::size_t>(dc.numel() / shape.n);
        for (std::size_t r = 0; r < rows; ++r) {
          for (std::int64_t j = 0; j < shape.n; ++j) {
            dbias.data_as<float>()[j] += load_as_float(dc.data(), dc.dtype(), r * shape.n + j);
          }
        }
        break;
      }
      case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
        cuda::column_sum_accumulate(dbias, dc, dc.device().stream());
        break;
#endif
        throw_no_cuda(op);
    }
  }
}

}  // namespace oomlab::ops
