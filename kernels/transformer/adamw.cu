// AdamW: the fused CUDA kernel (4 elements per thread, 128-bit accesses to the f32 streams
// when aligned) and its launcher.
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/transformer/adamw.hpp"

namespace oomlab::ops {

// CUDA kernels

constexpr int kAdamWidth = 4;

template <class Grad, class Param>
__global__ void adamw_kernel(float* master, Param* param_copy, const Grad* grad, float* m_state,
                             float* v_state, std::size_t n, bool vectorized, AdamWConfig config,
                             float bias_correction1, float bias_correction2) {
  std::size_t base = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kAdamWidth;
  if (base >= n) return;
  if (vectorized && base + kAdamWidth <= n) {
    float4 w = *reinterpret_cast<const float4*>(master + base);
    float4 m = *reinterpret_cast<const float4*>(m_state + base);
    float4 v = *reinterpret_cast<const float4*>(v_state + base);
    float* wv = &w.x;
    float* mv = &m.x;
    float* vv = &v.x;
#pragma unroll
    for (int k = 0; k < kAdamWidth; ++k) {
      wv[k] = adamw_update(wv[k], to_f32(grad[base + k]), mv[k], vv[k], config.lr, config.beta1,
                           config.beta2, config.eps, config.weight_decay, bias_correction1,
                           bias_correction2);
      if (param_copy) param_copy[base + k] = from_f32<Param>(wv[k]);
    }
    *reinterpret_cast<float4*>(master + base) = w;
    *reinterpret_cast<float4*>(m_state + base) = m;
    *reinterpret_cast<float4*>(v_state + base) = v;
    return;
  }
  for (std::size_t i = base; i < n && i < base + kAdamWidth; ++i) {
    float weight = adamw_update(master[i], to_f32(grad[i]), m_state[i], v_state[i], config.lr,
                                config.beta1, config.beta2, config.eps, config.weight_decay,
                                bias_correction1, bias_correction2);
    master[i] = weight;
    if (param_copy) param_copy[i] = from_f32<Param>(weight);
  }
}

// kernel launchers

namespace cuda {

void adamw_step(Tensor& master, Tensor& param_copy, const Tensor& grad, Tensor& m, Tensor& v,
                const AdamWConfig& config, float bias_correction1, float bias_correction2,
                memory::StreamHandle stream) {
  std::size_t n = static_cast<std::size_t>(master.numel());
  if (n == 0) return;
  bool vectorized = aligned16({master.data(), m.data(), v.data()});
  DType param_dtype = param_copy.defined() ? param_copy.dtype() : DType::f32;
  dispatch_float(grad.dtype(), "adamw_step", [&](auto grad_zero) {
    using Grad = decltype(grad_zero);
    dispatch_float(param_dtype, "adamw_step", [&](auto param_zero) {
      using Param = decltype(param_zero);
      constexpr unsigned kBlock = 256;
      adamw_kernel<Grad, Param><<<ceil_div(ceil_div(n, kAdamWidth), kBlock), kBlock, 0,
                                  as_cuda_stream(stream)>>>(
          master.data_as<float>(), param_copy.defined() ? param_copy.data_as<Param>() : nullptr,
          grad.data_as<const Grad>(), m.data_as<float>(), v.data_as<float>(), n, vectorized,
          config, bias_correction1, bias_correction2);
      OOMLAB_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
