// int8 row-wise quantisation: CPU reference and dispatch.
#include "kernels/transformer/quantize.hpp"

#include <cmath>

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"
#include "kernels/transformer/quantize_math.hpp"

namespace oomlab::ops {

namespace {

void check_quantized_pair(const char* op, const Tensor& values, const Tensor& q,
                          const Tensor& scales) {
  check_dtype(op, "values", values, kFloatDtypes);
  OOMLAB_CHECK(values.ndim() >= 1, op << ": " << values.describe() << " needs a row dimension");
  check_shape(op, "q", q, values.shape());
  check_dtype(op, "q", q, {DType::i8});
  check_shape(op, "scales", scales, {rows_of(values)});
  check_dtype(op, "scales", scales, {DType::f32});
  check_same_device(op, {&values, &q, &scales});
}

}  // namespace

void quantize_int8_rowwise(Tensor& q, Tensor& scales, const Tensor& x) {
  check_quantized_pair("quantize_int8_rowwise", x, q, scales);
  switch (x.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      std::size_t rows = static_cast<std::size_t>(rows_of(x));
      std::size_t cols = rows ? static_cast<std::size_t>(x.numel()) / rows : 0;
      for (std::size_t r = 0; r < rows; ++r) {
        float absmax = 0.0f;
        for (std::size_t c = 0; c < cols; ++c) {
          absmax = std::fmax(absmax, std::fabs(load_as_float(x.data(), x.dtype(), r * cols + c)));
        }
        scales.data_as<float>()[r] = int8_scale_from_absmax(absmax);
        float inverse = int8_inverse_scale(absmax);
        for (std::size_t c = 0; c < cols; ++c) {
          q.data_as<std::int8_t>()[r * cols + c] =
              quantize_int8(load_as_float(x.data(), x.dtype(), r * cols + c), inverse);
        }
      }
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::quantize_int8_rowwise(q, scales, x, x.device().stream());
#endif
      throw_no_cuda("quantize_int8_rowwise");
  }
}

void dequantize_int8_rowwise(Tensor& out, const Tensor& q, const Tensor& scales) {
  check_quantized_pair("dequantize_int8_rowwise", out, q, scales);
  switch (q.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      std::size_t rows = static_cast<std::size_t>(rows_of(q));
      std::size_t cols = rows ? static_cast<std::size_t>(q.numel()) / rows : 0;
      for (std::size_t i = 0; i < rows * cols; ++i) {
        float value = static_cast<float>(q.data_as<std::int8_t>()[i]) * scales.data_as<float>()[i / cols];
        store_value(out.data(), out.dtype(), i, value);
      }
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::dequantize_int8_rowwise(out, q, scales, q.device().stream());
#endif
      throw_no_cuda("dequantize_int8_rowwise");
  }
}

}  // namespace oomlab::ops
