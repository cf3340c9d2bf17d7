// AdamW: the fused CUDA kernel over many tensors at once (kernels/core/multi_tensor.cuh: a block
// per chunk of 64K elements, a launch per 640 chunks), 8 elements per thread with 128-bit accesses
// when every stream of a tensor is aligned, and its launcher.
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "kernels/core/multi_tensor.cuh"
#include "kernels/transformer/adamw.hpp"

namespace oomlab::ops {

// CUDA kernels

namespace {

constexpr unsigned kAdamBlock = 256;
constexpr std::int64_t kAdamChunk = 65536;
enum AdamList { kMaster, kM, kV, kGrad, kParam, kAdamLists };

struct AdamWScalars {
  AdamWConfig config;
  float bias_correction1, bias_correction2;
};

// The update of element i of a chunk (the CPU reference's adamw_update).
template <class Grad, class Param>
__device__ __forceinline__ void adamw_element(float* master, Param* param, const Grad* grad, float* m, float* v,
                                              std::int64_t i, const AdamWScalars& s) {
  const float weight = adamw_update(master[i], to_f32(grad[i]), m[i], v[i], s.config.lr, s.config.beta1,
                                    s.config.beta2, s.config.eps, s.config.weight_decay, s.bias_correction1,
                                    s.bias_correction2);
  master[i] = weight;
  if (param) param[i] = from_f32<Param>(weight);
}

template <class Grad, class Param>
__global__ void adamw_chunks_kernel(const __grid_constant__ ChunkBatch<kAdamLists> batch, AdamWScalars s) {
  const TensorChunk& chunk = batch.chunks[blockIdx.x];
  float* master = chunk_data<float>(batch, kMaster, chunk);
  float* m = chunk_data<float>(batch, kM, chunk);
  float* v = chunk_data<float>(batch, kV, chunk);
  const Grad* grad = chunk_data<const Grad>(batch, kGrad, chunk);
  Param* param = batch.data[kParam][chunk.tensor] ? chunk_data<Param>(batch, kParam, chunk) : nullptr;
  const bool vectorized = (batch.vectorized >> chunk.tensor) & 1;
  const std::int64_t whole = vectorized ? chunk.length / kMapWidth * kMapWidth : 0;
  for (std::int64_t base = std::int64_t{threadIdx.x} * kMapWidth; base < whole; base += blockDim.x * kMapWidth) {
    MapVec<float> w = *reinterpret_cast<const MapVec<float>*>(master + base);
    MapVec<float> mv = *reinterpret_cast<const MapVec<float>*>(m + base);
    MapVec<float> vv = *reinterpret_cast<const MapVec<float>*>(v + base);
    const MapVec<Grad> g = *reinterpret_cast<const MapVec<Grad>*>(grad + base);
    MapVec<Param> p;
#pragma unroll
    for (int k = 0; k < kMapWidth; ++k) {
      w.v[k] = adamw_update(w.v[k], to_f32(g.v[k]), mv.v[k], vv.v[k], s.config.lr, s.config.beta1, s.config.beta2,
                            s.config.eps, s.config.weight_decay, s.bias_correction1, s.bias_correction2);
      p.v[k] = from_f32<Param>(w.v[k]);
    }
    *reinterpret_cast<MapVec<float>*>(master + base) = w;
    *reinterpret_cast<MapVec<float>*>(m + base) = mv;
    *reinterpret_cast<MapVec<float>*>(v + base) = vv;
    if (param) *reinterpret_cast<MapVec<Param>*>(param + base) = p;
  }
  for (std::int64_t i = whole + threadIdx.x; i < chunk.length; i += blockDim.x) {
    adamw_element(master, param, grad, m, v, i, s);
  }
}

}  // namespace

// kernel launchers

namespace cuda {

void adamw_step(const std::vector<AdamWTensors>& tensors, const AdamWConfig& config, float bias_correction1,
                float bias_correction2, memory::StreamHandle stream) {
  // One pass per (gradient dtype, parameter copy dtype) the list holds: a kernel is typed by both.
  std::vector<bool> done(tensors.size(), false);
  for (std::size_t first = 0; first < tensors.size(); ++first) {
    if (done[first]) continue;
    const DType grad_dtype = tensors[first].grad.dtype();
    auto param_dtype_of = [](const AdamWTensors& t) {
      return t.param_copy.defined() ? t.param_copy.dtype() : DType::f32;
    };
    const DType param_dtype = param_dtype_of(tensors[first]);
    std::vector<ChunkedTensor<kAdamLists>> chunked;
    for (std::size_t i = first; i < tensors.size(); ++i) {
      const AdamWTensors& t = tensors[i];
      if (done[i] || t.grad.dtype() != grad_dtype || param_dtype_of(t) != param_dtype) continue;
      done[i] = true;
      void* param = t.param_copy.defined() ? t.param_copy.data() : nullptr;
      const bool vectorized = map_aligned(t.master.data(), 4) && map_aligned(t.m.data(), 4) &&
                              map_aligned(t.v.data(), 4) && map_aligned(t.grad.data(), dtype_size(grad_dtype)) &&
                              (param == nullptr || map_aligned(param, dtype_size(param_dtype)));
      chunked.push_back({{t.master.data(), t.m.data(), t.v.data(), t.grad.data(), param},
                         t.master.numel(), kAdamChunk, vectorized});
    }
    const AdamWScalars scalars{config, bias_correction1, bias_correction2};
    dispatch_float(grad_dtype, "adamw_step", [&](auto grad_zero) {
      using Grad = decltype(grad_zero);
      dispatch_float(param_dtype, "adamw_step", [&](auto param_zero) {
        using Param = decltype(param_zero);
        launch_chunked(chunked, [&](const ChunkBatch<kAdamLists>& batch) {
          adamw_chunks_kernel<Grad, Param>
              <<<batch.chunk_count, kAdamBlock, 0, as_cuda_stream(stream)>>>(batch, scalars);
          OOMLAB_CUDA_CHECK_LAUNCH();
        });
      });
    });
  }
}

}  // namespace cuda
}  // namespace oomlab::ops
