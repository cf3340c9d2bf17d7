// Central finite differences for checking a backward against its forward on host:
// the scalar loss is L = sum(out * probe) (probe random, fixed), so dL/dout = probe and the
// backward's gradient can be compared element by element with (L(x+h) - L(x-h)) / 2h.
#pragma once
#include <functional>
#include <stdexcept>
#include <vector>

#include "kernels/core/tensor.hpp"

namespace oomlab::testing {

// sum(out * probe) accumulated in double; `out` must be a host tensor.
inline double probe_loss(const Tensor& out, const std::vector<float>& probe) {
  std::vector<float> values = out.to_host_f32();
  if (values.size() != probe.size()) throw std::invalid_argument("probe_loss: size mismatch");
  double sum = 0;
  for (std::size_t i = 0; i < values.size(); ++i) sum += double(values[i]) * probe[i];
  return sum;
}

// d loss / d input for every element of a host f32 tensor, perturbing it in place (and
// restoring it) around each evaluation of `loss`.
inline std::vector<float> finite_difference_gradient(Tensor& input,
                                                     const std::function<double()>& loss,
                                                     float step = 1e-3f) {
  if (input.device().kind() != DeviceKind::host || input.dtype() != DType::f32) {
    throw std::invalid_argument("finite_difference_gradient needs a host f32 tensor");
  }
  float* data = input.data_as<float>();
  std::vector<float> gradient(static_cast<std::size_t>(input.numel()));
  for (std::size_t i = 0; i < gradient.size(); ++i) {
    float saved = data[i];
    float up = saved + step, down = saved - step;  // the steps actually taken in f32
    data[i] = up;
    double plus = loss();
    data[i] = down;
    double minus = loss();
    data[i] = saved;
    gradient[i] = static_cast<float>((plus - minus) / (double(up) - double(down)));
  }
  return gradient;
}

}  // namespace oomlab::testing
