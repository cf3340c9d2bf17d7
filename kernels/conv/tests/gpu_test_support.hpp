// Helpers for the conv-area GPU tests: copies of host tensors on cuda, and a description of a
// case for failure messages (the lead runs these remotely, so a failure must say everything).
#pragma once
#include <sstream>
#include <string>

#include "kernels/core/tensor.hpp"

namespace oomlab::testing {

inline Tensor copy_to(Device& device, const Tensor& source) {
  Tensor copy = Tensor::empty(device, source.shape(), source.dtype());
  copy.copy_from(source);
  return copy;
}

inline std::string describe_case(const std::string& op, const Shape& shape, DType dtype,
                                 const std::string& extra = "") {
  std::ostringstream out;
  out << op << " " << dtype_name(dtype) << shape_string(shape) << (extra.empty() ? "" : " ") << extra;
  return out.str();
}

}  // namespace oomlab::testing
