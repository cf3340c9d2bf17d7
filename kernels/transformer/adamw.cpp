// AdamW: CPU reference and dispatch.
#include "kernels/transformer/adamw.hpp"

#include <cmath>

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::ops {

namespace {

void check_adamw(const char* op, const AdamWTensors& t) {
  check_dtype(op, "master", t.master, {DType::f32});
  check_dtype(op, "m", t.m, {DType::f32});
  check_dtype(op, "v", t.v, {DType::f32});
  check_dtype(op, "grad", t.grad, kFloatDtypes);
  const std::int64_t n = t.master.numel();
  for (const Tensor* other : {&t.grad, &t.m, &t.v}) {
    OOMLAB_CHECK(other->numel() == n, op << ": " << other->describe() << " differs in size from master "
                                         << t.master.describe());
  }
  if (t.param_copy.defined()) {
    check_dtype(op, "param_copy", t.param_copy, kFloatDtypes);
    OOMLAB_CHECK(t.param_copy.numel() == n, op << ": param_copy " << t.param_copy.describe()
                                               << " differs in size from master");
  }
  check_same_device(op, {&t.master, &t.param_copy, &t.grad, &t.m, &t.v});
}

void adamw_host(const AdamWTensors& t, const AdamWConfig& config, float bias_correction1, float bias_correction2) {
  float* master = t.master.data_as<float>();
  float* m = t.m.data_as<float>();
  float* v = t.v.data_as<float>();
  for (std::size_t i = 0; i < static_cast<std::size_t>(t.master.numel()); ++i) {
    const float weight = adamw_update(master[i], load_as_float(t.grad.data(), t.grad.dtype(), i), m[i], v[i],
                                      config.lr, config.beta1, config.beta2, config.eps, config.weight_decay,
                                      bias_correction1, bias_correction2);
    master[i] = weight;
    if (t.param_copy.defined()) store_value(t.param_copy.data(), t.param_copy.dtype(), i, weight);
  }
}

}  // namespace

void adamw_step(const std::vector<AdamWTensors>& tensors, const AdamWConfig& config, int step) {
  const char* op = "adamw_step";
  OOMLAB_CHECK(step >= 1, op << ": step " << step << " must count from 1");
  if (tensors.empty()) return;
  for (const AdamWTensors& t : tensors) {
    check_adamw(op, t);
    check_same_device(op, {&tensors.front().master, &t.master});
  }
  const float bias_correction1 = static_cast<float>(1.0 - std::pow(double(config.beta1), step));
  const float bias_correction2 = static_cast<float>(1.0 - std::pow(double(config.beta2), step));
  Device& device = tensors.front().master.device();
  switch (device.kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (const AdamWTensors& t : tensors) adamw_host(t, config, bias_correction1, bias_correction2);
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::adamw_step(tensors, config, bias_correction1, bias_correction2, device.stream());
#endif
      throw_no_cuda(op);
  }
}

void adamw_step(Tensor& master, Tensor& param_copy, const Tensor& grad, Tensor& m, Tensor& v,
                const AdamWConfig& config, int step) {
  adamw_step(std::vector<AdamWTensors>{{master, param_copy, grad, m, v}}, config, step);
}

}  // namespace oomlab::ops
