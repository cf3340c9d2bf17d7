// The argument checks every element-wise op of the conv area makes, over kernels/core/op_checks.
#pragma once
#include <initializer_list>

#include "kernels/core/op_checks.hpp"

namespace oomlab::ops::detail {

// `first` is a float tensor; every other tensor (skipping undefined ones when optional) has its
// shape, dtype and device.
inline void check_elementwise(const char* op, const char* first_name, const Tensor& first,
                              std::initializer_list<std::pair<const char*, const Tensor*>> others) {
  check_dtype(op, first_name, first, kFloatDtypes);
  for (const auto& [name, t] : others) {
    check_shape(op, name, *t, first.shape());
    check_same_dtype(op, first, *t);
    check_same_device(op, {&first, t});
  }
}

// A one-element f32 tensor receiving a scalar result (loss, sum, mean) on `input`'s device.
inline void check_scalar_output(const char* op, const Tensor& out, const Tensor& input) {
  check_dtype(op, "output", out, {DType::f32});
  OOMLAB_CHECK(out.numel() == 1, op << ": output must have one element, got " << out.describe());
  check_same_device(op, {&input, &out});
}

}  // namespace oomlab::ops::detail
