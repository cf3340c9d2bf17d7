// The element-wise epilogue of the conv data passes on the device (conv2d.hpp's ConvEpilogue):
// applied to output values already rounded to T, one separate op after another with the same
// f32 formulas and roundings as residual_add and leaky_relu_{forward,backward}, so a fused pass
// equals the unfused sequence bit for bit. `at` is the output element's index: the addend and
// the activation output have the output's layout.
#pragma once
#include <cstdint>

#include "kernels/conv/activation_math.hpp"
#include "kernels/conv/conv2d_launch.hpp"
#include "kernels/core/cuda_types.cuh"

namespace oomlab::ops::detail {

template <class T>
struct OutputEpilogue {
  const T* addend = nullptr;
  // Set in backward-data only (conv2d checks it): the activation is then applied as the gradient
  // through it, at this forward output.
  const T* activation_output = nullptr;
  bool activation = false;
  float slope = 0.0f;

  static OutputEpilogue make(const EpilogueArgs& args) {
    OutputEpilogue e;
    e.addend = static_cast<const T*>(args.addend);
    e.activation_output = static_cast<const T*>(args.activation_output);
    e.activation = args.activation;
    e.slope = args.slope;
    return e;
  }

  __device__ __forceinline__ bool any() const { return addend != nullptr || activation; }

  __device__ __forceinline__ T finish(T value, T add, T activated) const {
    if (addend != nullptr) value = from_f32<T>(to_f32(value) + to_f32(add));
    if (activation) {
      const float v = to_f32(value);
      value = from_f32<T>(activation_output != nullptr ? leaky_relu_grad(to_f32(activated), v, slope)
                                                       : leaky_relu_value(v, slope));
    }
    return value;
  }

  __device__ __forceinline__ void apply(T& value, std::int64_t at) const {
    if (!any()) return;
    const T zero = from_f32<T>(0.0f);
    value = finish(value, addend != nullptr ? addend[at] : zero,
                   activation && activation_output != nullptr ? activation_output[at] : zero);
  }

  // 16 consecutive bytes of the output at `at` (16-byte aligned like the output's).
  __device__ __forceinline__ void apply(Pack128<T>& pack, std::int64_t at) const {
    if (!any()) return;
    Pack128<T> add{}, activated{};
    if (addend != nullptr) add = load128(addend + at);
    if (activation && activation_output != nullptr) activated = load128(activation_output + at);
#pragma unroll
    for (int e = 0; e < Pack128<T>::kSize; ++e) {
      pack.values[e] = finish(pack.values[e], add.values[e], activated.values[e]);
    }
  }
};

// The epilogue reads its tensors where the output is stored: 16-byte stores need them aligned too.
inline bool epilogue_aligned(const EpilogueArgs& args) {
  return aligned16({args.addend, args.activation_output});
}

}  // namespace oomlab::ops::detail
