// AdamW with 8-bit moments: one CUDA block per quantisation block of 2048 moments (256 threads,
// 8 moments each, kept in registers between the update and the requantisation).
#include "kernels/core/elementwise.cuh"
#include "kernels/transformer/adamw8bit.hpp"

namespace oomlab::ops {
namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = kAdam8BitBlock / kThreads;
static_assert(kAdam8BitBlock % kThreads == 0);

__device__ float block_max(float value, float* scratch) {
  value = warp_max(value);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = warp_max(lane < kThreads / 32 ? scratch[lane] : 0.0f);
  __syncthreads();  // scratch is reused by the next reduction
  return value;
}

template <class G, class P>
__global__ void __launch_bounds__(kThreads) adamw8bit_kernel(
    float* master, P* param_copy, const G* grad, std::uint8_t* m_codes, float* m_absmax, std::uint8_t* v_codes,
    float* v_absmax, std::int64_t n, AdamWConfig config, float bias_correction1, float bias_correction2) {
  __shared__ float m_map[kDynamicMapSize], v_map[kDynamicMapSize];
  __shared__ float scratch[kThreads / 32];
  m_map[threadIdx.x] = dynamic_map_value(true, threadIdx.x);
  v_map[threadIdx.x] = dynamic_map_value(false, threadIdx.x);
  __syncthreads();
  const std::int64_t block = blockIdx.x;
  const float m_scale = m_absmax[block], v_scale = v_absmax[block];
  float m[kPerThread], v[kPerThread];
  float m_max = 0, v_max = 0;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const std::int64_t i = block * kAdam8BitBlock + k * kThreads + threadIdx.x;  // coalesced
    m[k] = 0;
    v[k] = 0;
    if (i >= n) continue;
    m[k] = m_map[m_codes[i]] * m_scale;
    v[k] = v_map[v_codes[i]] * v_scale;
    const float weight = adamw_update(master[i], to_f32(grad[i]), m[k], v[k], config.lr, config.beta1, config.beta2,
                                      config.eps, config.weight_decay, bias_correction1, bias_correction2);
    master[i] = weight;
    if (param_copy != nullptr) param_copy[i] = from_f32<P>(weight);
    m_max = fmaxf(m_max, fabsf(m[k]));
    v_max = fmaxf(v_max, v[k]);
  }
  m_max = block_max(m_max, scratch);
  v_max = block_max(v_max, scratch);
  if (threadIdx.x == 0) {
    m_absmax[block] = m_max;
    v_absmax[block] = v_max;
  }
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const std::int64_t i = block * kAdam8BitBlock + k * kThreads + threadIdx.x;
    if (i >= n) continue;
    m_codes[i] = dynamic_quantize(m_map, m_max > 0 ? m[k] / m_max : 0.0f);
    v_codes[i] = dynamic_quantize(v_map, v_max > 0 ? v[k] / v_max : 0.0f);
  }
}

}  // namespace

namespace cuda {

void adamw8bit_step(Tensor& master, Tensor& param_copy, const Tensor& grad, Tensor& m_codes, Tensor& m_absmax,
                    Tensor& v_codes, Tensor& v_absmax, const AdamWConfig& config, float bias_correction1,
                    float bias_correction2, memory::StreamHandle stream) {
  const std::int64_t n = master.numel();
  if (n == 0) return;
  const DType copy_dtype = param_copy.defined() ? param_copy.dtype() : DType::f32;
  dispatch_float(grad.dtype(), "adamw8bit_step", [&](auto grad_zero) {
    using G = decltype(grad_zero);
    dispatch_float(copy_dtype, "adamw8bit_step", [&](auto copy_zero) {
      using P = decltype(copy_zero);
      adamw8bit_kernel<G, P><<<static_cast<unsigned>(adam8bit_blocks(n)), kThreads, 0, as_cuda_stream(stream)>>>(
          master.data_as<float>(), param_copy.defined() ? param_copy.data_as<P>() : nullptr, grad.data_as<const G>(),
          reinterpret_cast<std::uint8_t*>(m_codes.data()), m_absmax.data_as<float>(),
          reinterpret_cast<std::uint8_t*>(v_codes.data()), v_absmax.data_as<float>(), n, config, bias_correction1,
          bias_correction2);
      OOMLAB_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
