// Reading and writing element i of host-resident data of any dtype as a number. CPU reference
// kernels use these so one loop serves f32, bf16 and f16 (and the integer types).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/core/dtype.hpp"

namespace oomlab {

inline float load_as_float(const void* data, DType dtype, std::size_t i) {
  switch (dtype) {
    case DType::f32: return static_cast<const float*>(data)[i];
    case DType::bf16: return bf16_bits_to_float(static_cast<const std::uint16_t*>(data)[i]);
    case DType::f16: return f16_bits_to_float(static_cast<const std::uint16_t*>(data)[i]);
    case DType::i8: return static_cast<const std::int8_t*>(data)[i];
    case DType::i32: return static_cast<float>(static_cast<const std::int32_t*>(data)[i]);
    case DType::i64: return static_cast<float>(static_cast<const std::int64_t*>(data)[i]);
  }
  return 0.0f;
}

// Integers: rounded half to even and saturated to the type's range (NaN gives 0), as CUDA's
// cvt.rni.sat does, so an out-of-range value never reaches undefined behaviour.
template <class Int>
Int saturate_round(double value) {
  if (std::isnan(value)) return 0;
  double rounded = std::nearbyint(value);
  if (rounded <= static_cast<double>(std::numeric_limits<Int>::min())) return std::numeric_limits<Int>::min();
  if (rounded >= static_cast<double>(std::numeric_limits<Int>::max())) return std::numeric_limits<Int>::max();
  return static_cast<Int>(rounded);
}

inline void store_value(void* data, DType dtype, std::size_t i, double value) {
  switch (dtype) {
    case DType::f32: static_cast<float*>(data)[i] = static_cast<float>(value); return;
    case DType::bf16:
      static_cast<std::uint16_t*>(data)[i] = float_to_bf16_bits(static_cast<float>(value));
      return;
    case DType::f16:
      static_cast<std::uint16_t*>(data)[i] = float_to_f16_bits(static_cast<float>(value));
      return;
    case DType::i8: static_cast<std::int8_t*>(data)[i] = saturate_round<std::int8_t>(value); return;
    case DType::i32: static_cast<std::int32_t*>(data)[i] = saturate_round<std::int32_t>(value); return;
    case DType::i64: static_cast<std::int64_t*>(data)[i] = saturate_round<std::int64_t>(value); return;
  }
}

// Rounds `value` to dtype and back: what a kernel storing in dtype would leave in memory.
inline float round_to_dtype(float value, DType dtype) {
  unsigned char bytes[8];
  store_value(bytes, dtype, 0, value);
  return load_as_float(bytes, dtype, 0);
}

}  // namespace oomlab
