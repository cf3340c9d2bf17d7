// AdamW with 8-bit moments: CPU reference and dispatch.
#include "kernels/transformer/adamw8bit.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::ops {
namespace {

const float* dynamic_map(bool is_signed) {
  static const auto build = [](bool s) {
    std::array<float, kDynamicMapSize> map{};
    for (int i = 0; i < kDynamicMapSize; ++i) map[static_cast<std::size_t>(i)] = dynamic_map_value(s, i);
    return map;
  };
  static const std::array<float, kDynamicMapSize> signed_map = build(true), unsigned_map = build(false);
  return is_signed ? signed_map.data() : unsigned_map.data();
}

void check_state(const char* op, const char* name, const Tensor& codes, const Tensor& absmax, std::int64_t n) {
  check_dtype(op, name, codes, {DType::i8});
  check_dtype(op, name, absmax, {DType::f32});
  OOMLAB_CHECK(codes.numel() == n, op << ": " << name << " codes " << codes.describe() << " are not " << n << " bytes");
  OOMLAB_CHECK(absmax.numel() == adam8bit_blocks(n),
               op << ": " << name << " absmax " << absmax.describe() << " is not one per block of " << kAdam8BitBlock);
}

}  // namespace

void adamw8bit_step(Tensor& master, Tensor& param_copy, const Tensor& grad, Tensor& m_codes, Tensor& m_absmax,
                    Tensor& v_codes, Tensor& v_absmax, const AdamWConfig& config, int step) {
  const char* op = "adamw8bit_step";
  check_dtype(op, "master", master, {DType::f32});
  check_dtype(op, "grad", grad, kFloatDtypes);
  const std::int64_t n = master.numel();
  OOMLAB_CHECK(grad.numel() == n, op << ": grad " << grad.describe() << " differs in size from master");
  check_state(op, "m", m_codes, m_absmax, n);
  check_state(op, "v", v_codes, v_absmax, n);
  if (param_copy.defined()) {
    check_dtype(op, "param_copy", param_copy, kFloatDtypes);
    OOMLAB_CHECK(param_copy.numel() == n,
                 op << ": param_copy " << param_copy.describe() << " differs in size from master");
  }
  OOMLAB_CHECK(step >= 1, op << ": step " << step << " must count from 1");
  check_same_device(op, {&master, &param_copy, &grad, &m_codes, &m_absmax, &v_codes, &v_absmax});
  const float bias_correction1 = static_cast<float>(1.0 - std::pow(double(config.beta1), step));
  const float bias_correction2 = static_cast<float>(1.0 - std::pow(double(config.beta2), step));
  switch (master.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      const float* m_map = dynamic_map(true);
      const float* v_map = dynamic_map(false);
      auto* mc = reinterpret_cast<std::uint8_t*>(m_codes.data());
      auto* vc = reinterpret_cast<std::uint8_t*>(v_codes.data());
      float* m_scale = m_absmax.data_as<float>();
      float* v_scale = v_absmax.data_as<float>();
      float* weights = master.data_as<float>();
      std::array<float, kAdam8BitBlock> m{}, v{};
      for (std::int64_t b = 0; b < adam8bit_blocks(n); ++b) {
        const std::size_t begin = static_cast<std::size_t>(b * kAdam8BitBlock);
        const std::size_t end = std::min(static_cast<std::size_t>(n), begin + kAdam8BitBlock);
        float m_max = 0, v_max = 0;
        for (std::size_t i = begin; i < end; ++i) {
          float& mi = m[i - begin];
          float& vi = v[i - begin];
          mi = m_map[mc[i]] * m_scale[b];
          vi = v_map[vc[i]] * v_scale[b];
          weights[i] = adamw_update(weights[i], load_as_float(grad.data(), grad.dtype(), i), mi, vi, config.lr,
                                    config.beta1, config.beta2, config.eps, config.weight_decay, bias_correction1,
                                    bias_correction2);
          if (param_copy.defined()) store_value(param_copy.data(), param_copy.dtype(), i, weights[i]);
          m_max = std::max(m_max, std::fabs(mi));
          v_max = std::max(v_max, vi);
        }
        m_scale[b] = m_max;
        v_scale[b] = v_max;
        for (std::size_t i = begin; i < end; ++i) {
          mc[i] = dynamic_quantize(m_map, m_max > 0 ? m[i - begin] / m_max : 0.0f);
          vc[i] = dynamic_quantize(v_map, v_max > 0 ? v[i - begin] / v_max : 0.0f);
        }
      }
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::adamw8bit_step(master, param_copy, grad, m_codes, m_absmax, v_codes, v_absmax, config,
                                  bias_correction1, bias_correction2, master.device().stream());
#endif
      throw_no_cuda(op);
  }
}

void dequantize_moments(Tensor& out, const Tensor& codes, const Tensor& absmax, bool is_signed) {
  const char* op = "dequantize_moments";
  check_dtype(op, "out", out, {DType::f32});
  check_state(op, "moments", codes, absmax, out.numel());
  check_same_device(op, {&out, &codes, &absmax});
  if (out.device().kind() == DeviceKind::dry) return;
  OOMLAB_CHECK(out.device().kind() == DeviceKind::host, op << ": host tensors only (copy the state there first)");
  const float* map = dynamic_map(is_signed);
  const auto* c = reinterpret_cast<const std::uint8_t*>(codes.data());
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    out.data_as<float>()[i] = map[c[i]] * absmax.data_as<float>()[i / kAdam8BitBlock];
  }
}

}  // namespace oomlab::ops
