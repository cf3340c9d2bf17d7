// AdamW, fused: one kernel reads the gradient, updates the f32 moments and the f32 master
// weights, and writes the low-precision parameter copy the forward uses (bf16/f16), so mixed
// precision costs no extra pass. Decoupled weight decay, bias correction (PyTorch's AdamW).
#pragma once
#include <cmath>
#include <vector>

#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"
#include "kernels/core/host_device.hpp"

namespace oomlab::ops {

struct AdamWConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
};

// master, m, v: f32 of equal numel; grad: f32/bf16/f16 of that numel; param_copy: bf16/f16/f32
// of that numel, or undefined when the master weights are the parameters. step counts from 1.
void adamw_step(Tensor& master, Tensor& param_copy, const Tensor& grad, Tensor& m, Tensor& v,
                const AdamWConfig& config, int step);

// One parameter's tensors, as adamw_step takes them (views of the caller's tensors).
struct AdamWTensors {
  Tensor master, param_copy, grad, m, v;
};
// The step of every entry, the same math as one adamw_step each; on cuda in a few launches over
// all of them (kernels/core/multi_tensor.cuh), as PyTorch's fused AdamW takes its parameter list.
void adamw_step(const std::vector<AdamWTensors>& tensors, const AdamWConfig& config, int step);

// The per-element update shared by the CPU reference and the kernel. Returns the new weight.
OOMLAB_HOST_DEVICE inline float adamw_update(float weight, float grad, float& m, float& v, float lr,
                                             float beta1, float beta2, float eps,
                                             float weight_decay, float bias_correction1,
                                             float bias_correction2) {
  m = beta1 * m + (1.0f - beta1) * grad;
  v = beta2 * v + (1.0f - beta2) * grad * grad;
  float m_hat = m / bias_correction1;
  float v_hat = v / bias_correction2;
  return weight - lr * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * weight);
}

namespace cuda {
void adamw_step(const std::vector<AdamWTensors>& tensors, const AdamWConfig& config, float bias_correction1,
                float bias_correction2, memory::StreamHandle stream);
}

}  // namespace oomlab::ops
