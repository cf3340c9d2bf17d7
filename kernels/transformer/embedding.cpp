// Embedding: CPU reference and dispatch.
#include "kernels/transformer/embedding.hpp"

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
  check_dtype(op, "dwte", dwte, {DType::f32});
  OOMLAB_CHECK(dwte.ndim() == 2, op << ": dwte " << dwte.describe() << " must be (V, C)");
  std::int64_t B = tokens.dim(0), T = tokens.dim(1), V = dwte.dim(0), C = dwte.dim(1);
  check_dtype(op, "dout", dout, kFloatDtypes);
  check_shape(op, "dout", dout, {B, T, C});
  if (dwpe.defined()) {
    check_dtype(op, "dwpe", dwpe, {DType::f32});
    OOMLAB_CHECK(dwpe.ndim() == 2 && dwpe.dim(0) >= T && dwpe.dim(1) == C,
                 op << ": dwpe " << dwpe.describe() << " must be (maxT >= " << T << ", " << C << ")");
  }
  check_same_device(op, {&dwte, &dwpe, &dout, &tokens});
  switch (dout.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::int64_t b = 0; b < B; ++b) {
        for (std::int64_t t = 0; t < T; ++t) {
          std::size_t row = static_cast<std::size_t>(b * T + t);
          std::int32_t token = checked_token(tokens, row, V, op);
          for (std::int64_t c = 0; c < C; ++c) {
            float g = load_as_float(dout.data(), dout.dtype(), row * C + c);
            dwte.data_as<float>()[token * C + c] += g;
            if (dwpe.defined()) dwpe.data_as<float>()[t * C + c] += g;
          }
        }
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::embedding_backward(dwte, dwpe, dout, tokens, dout.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
