// AdamW: CPU reference and dispatch.
#include "kernels/transformer/adamw.hpp"

#include <cmath>

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::ops {

void adamw_step(Tensor& master, Tensor& param_copy, const Tensor& grad, Tensor& m, Tensor& v,
                const AdamWConfig& config, int step) {
  const char* op = "adamw_step";
  check_dtype(op, "master", master, {DType::f32});
  check_dtype(op, "m", m, {DType::f32});
  check_dtype(op, "v", v, {DType::f32});
  check_dtype(op, "grad", grad, kFloatDtypes);
  std::int64_t n = master.numel();
  for (const Tensor* t : {&grad, static_cast<const Tensor*>(&m), static_cast<const Tensor*>(&v)}) {
    OOMLAB_CHECK(t->numel() == n, op << ": " << t->describe() << " differs in size from master "
                                     << master.describe());
  }
  if (param_copy.defined()) {
    check_dtype(op, "param_copy", param_copy, kFloatDtypes);
    OOMLAB_CHECK(param_copy.numel() == n, op << ": param_copy " << param_copy.describe()
                                             << " differs in size from master");
  }
  OOMLAB_CHECK(step >= 1, op << ": step " << step << " must count from 1");
  check_same_device(op, {&master, &param_copy, &grad, &m, &v});
  float bias_correction1 = static_cast<float>(1.0 - std::pow(double(config.beta1), step));
  float bias_correction2 = static_cast<float>(1.0 - std::pow(double(config.beta2), step));
  switch (master.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
        float weight = adamw_update(master.data_as<float>()[i],
                                    load_as_float(grad.data(), grad.dtype(), i),
                                    m.data_as<float>()[i], v.data_as<float>()[i], config.lr,
                                    config.beta1, config.beta2, config.eps, config.weight_decay,
                                    bias_correction1, bias_correction2);
        master.data_as<float>()[i] = weight;
        if (param_copy.defined()) store_value(param_copy.data(), param_copy.dtype(), i, weight);
      }
      return;
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::adamw_step(master, param_copy, grad, m, v, config, bias_correction1,
                              bias_correction2, master.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
