// Embedding: CPU reference and dispatch.
#include "kernels/transformer/embedding.hpp"

#include <algorithm>
#include <vector>

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::ops {

namespace {

std::int32_t checked_token(const Tensor& tokens, std::size_t i, std::int64_t vocab, const char* op) {
  std::int32_t token = tokens.data_as<const std::int32_t>()[i];
  OOMLAB_CHECK(token >= 0 && token < vocab,
               op << ": token " << token << " at " << i << " outside the vocabulary of " << vocab);
  return token;
}

}  // namespace

void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& wte, const Tensor& wpe) {
  const char* op = "embedding_forward";
  check_dtype(op, "tokens", tokens, {DType::i32});
  OOMLAB_CHECK(tokens.ndim() == 2, op << ": tokens " << tokens.describe() << " must be (B, T)");
  check_dtype(op, "wte", wte, kFloatDtypes);
  OOMLAB_CHECK(wte.ndim() == 2, op << ": wte " << wte.describe() << " must be (V, C)");
  std::int64_t B = tokens.dim(0), T = tokens.dim(1), V = wte.dim(0), C = wte.dim(1);
  if (wpe.defined()) {
    OOMLAB_CHECK(wpe.ndim() == 2 && wpe.dim(0) >= T && wpe.dim(1) == C,
                 op << ": wpe " << wpe.describe() << " must be (maxT >= " << T << ", " << C << ")");
    check_same_dtype(op, wpe, wte);
  }
  check_shape(op, "out", out, {B, T, C});
  check_same_dtype(op, out, wte);
  check_same_device(op, {&out, &tokens, &wte, &wpe});
  switch (wte.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::int64_t b = 0; b < B; ++b) {
        for (std::int64_t t = 0; t < T; ++t) {
          std::size_t row = static_cast<std::size_t>(b * T + t);
          std::int32_t token = checked_token(tokens, row, V, op);
          for (std::int64_t c = 0; c < C; ++c) {
            float value = load_as_float(wte.data(), wte.dtype(), token * C + c);
            if (wpe.defined()) value += load_as_float(wpe.data(), wpe.dtype(), t * C + c);
            store_value(out.data(), out.dtype(), row * C + c, value);
          }
        }
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::embedding_forward(out, tokens, wte, wpe, wte.device().stream());
#endif
      throw_no_cuda(op);
  }
}

void embedding_backward(Tensor& dwte, Tensor& dwpe, const Tensor& dout, const Tensor& tokens) {
  const char* op = "embedding_backward";
  check_dtype(op, "tokens", tokens, {DType::i32});
  OOMLAB_CHECK(tokens.ndim() == 2, op << ": tokens " << tokens.describe() << " must be (B, T)");
  check_dtype(op, "dwte", dwte, kFloatDtypes);
  OOMLAB_CHECK(dwte.ndim() == 2, op << ": dwte " << dwte.describe() << " must be (V, C)");
  std::int64_t B = tokens.dim(0), T = tokens.dim(1), V = dwte.dim(0), C = dwte.dim(1);
  check_dtype(op, "dout", dout, kFloatDtypes);
  check_shape(op, "dout", dout, {B, T, C});
  if (dwpe.defined()) {
    check_dtype(op, "dwpe", dwpe, kFloatDtypes);
    OOMLAB_CHECK(dwpe.ndim() == 2 && dwpe.dim(0) >= T && dwpe.dim(1) == C,
                 op << ": dwpe " << dwpe.describe() << " must be (maxT >= " << T << ", " << C << ")");
  }
  check_same_device(op, {&dwte, &dwpe, &dout, &tokens});
  switch (dout.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      // As the kernels do: per token (and per position), the f32 sum of dout in ascending row
      // order, added to the gradient once.
      const std::size_t rows = static_cast<std::size_t>(B * T), width = static_cast<std::size_t>(C);
      std::vector<bool> summed(rows, false);
      std::vector<float> sum(width);
      auto add_once = [&](Tensor& grad, std::size_t grad_row) {
        for (std::size_t c = 0; c < width; ++c) {
          const std::size_t i = grad_row * width + c;
          store_value(grad.data(), grad.dtype(), i, load_as_float(grad.data(), grad.dtype(), i) + sum[c]);
        }
      };
      for (std::size_t row = 0; row < rows; ++row) {
        const std::int32_t token = checked_token(tokens, row, V, op);
        if (summed[row]) continue;
        std::fill(sum.begin(), sum.end(), 0.0f);
        for (std::size_t j = row; j < rows; ++j) {
          if (tokens.data_as<const std::int32_t>()[j] != token) continue;
          summed[j] = true;
          for (std::size_t c = 0; c < width; ++c) sum[c] += load_as_float(dout.data(), dout.dtype(), j * width + c);
        }
        add_once(dwte, static_cast<std::size_t>(token));
      }
      if (dwpe.defined()) {
        for (std::int64_t t = 0; t < T; ++t) {
          std::fill(sum.begin(), sum.end(), 0.0f);
          for (std::int64_t b = 0; b < B; ++b) {
            for (std::size_t c = 0; c < width; ++c) {
              sum[c] += load_as_float(dout.data(), dout.dtype(), static_cast<std::size_t>(b * T + t) * width + c);
            }
          }
          add_once(dwpe, static_cast<std::size_t>(t));
        }
      }
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::embedding_backward(dwte, dwpe, dout, tokens, dout.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
