// Argument checks shared by ops, so every op rejects bad calls the same way (std::invalid_argument
// naming the op and the tensors) on every device, dry included.
#pragma once
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "kernels/core/check.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

inline void check_defined(const char* op, const char* name, const Tensor& t) {
  OOMLAB_CHECK(t.defined(), op << ": " << name << " is undefined");
}

inline void check_shape(const char* op, const char* name, const Tensor& t, const Shape& expected) {
  check_defined(op, name, t);
  OOMLAB_CHECK(t.shape() == expected, op << ": " << name << " is " << t.describe()
                                         << ", expected shape " << shape_string(expected));
}

inline void check_dtype(const char* op, const char* name, const Tensor& t,
                        std::initializer_list<DType> allowed) {
  check_defined(op, name, t);
  bool ok = false;
  for (DType d : allowed) ok = ok || t.dtype() == d;
  OOMLAB_CHECK(ok, op << ": " << name << " " << t.describe() << " has an unsupported dtype");
}

inline void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  OOMLAB_CHECK(a.dtype() == b.dtype(),
               op << ": dtypes differ: " << a.describe() << " and " << b.describe());
}

// An optional operand added to an output (a skip connection's residual): undefined, or `like`'s
// shape and dtype in another tensor than `out`.
inline void check_residual(const char* op, const Tensor& residual, const Tensor& like, const Tensor& out) {
  if (!residual.defined()) return;
  check_shape(op, "residual", residual, like.shape());
  check_same_dtype(op, residual, like);
  OOMLAB_CHECK(residual.data() != out.data(), op << ": the residual is the output itself");
}

// All tensors live on the same Device object (host refs and cuda kernels never mix).
inline void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Device* device = nullptr;
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    if (!device) device = &t->device();
    OOMLAB_CHECK(&t->device() == device, op << ": " << t->describe() << " is on another device");
  }
}

// Rows of a tensor seen as (rows, last dim).
inline std::int64_t rows_of(const Tensor& t) {
  return t.ndim() == 0 || t.dim(-1) == 0 ? 0 : t.numel() / t.dim(-1);
}

}  // namespace oomlab::ops

namespace oomlab::ops {

// For the `default:` of a dispatch switch reached with a cuda tensor in a CPU-only build.
[[noreturn]] inline void throw_no_cuda(const char* op) {
  throw std::logic_error(std::string(op) + ": cuda tensor in a build without CUDA");
}

inline constexpr std::initializer_list<DType> kFloatDtypes = {DType::f32, DType::bf16, DType::f16};

}  // namespace oomlab::ops
