// Element types and bit-exact host conversions. The float -> 16-bit routines follow the host
// path of CUDA's __float2bfloat16 / __float2half (cuda_bf16.hpp, cuda_fp16.hpp): truncate,
// keep the dropped bits as a 32-bit "remainder", round half to even; every NaN becomes the
// canonical 0x7FFF, as the device cvt.rn instructions produce.
#include "kernels/core/dtype.hpp"

#include <cstring>

namespace oomlab {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::i8: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::i8: return "i8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::i8, DType::i32, DType::i64}) {
    if (name == dtype_name(dtype)) return dtype;
  }
  return std::nullopt;
}

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
}

namespace {

std::uint32_t float_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float bits_float(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Round half to even given the truncated result and the dropped bits left-aligned in 32 bits.
std::uint16_t round_nearest_even(std::uint32_t truncated, std::uint32_t remainder) {
  if (remainder > 0x80000000u || (remainder == 0x80000000u && (truncated & 1u) != 0)) {
    ++truncated;
  }
  return static_cast<std::uint16_t>(truncated);
}

constexpr std::uint16_t kCanonicalNan16 = 0x7FFF;

}  // namespace

std::uint16_t float_to_bf16_bits(float value) {
  std::uint32_t x = float_bits(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return kCanonicalNan16;
  return round_nearest_even(x >> 16, x << 16);
}

float bf16_bits_to_float(std::uint16_t bits) {
  return bits_float(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t float_to_f16_bits(float value) {
  std::uint32_t x = float_bits(value);
  std::uint32_t magnitude = x & 0x7FFFFFFFu;
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t result;
  std::uint32_t remainder;
  if (magnitude >= 0x7F800000u) {  // inf or NaN
    if (magnitude != 0x7F800000u) return kCanonicalNan16;
    return static_cast<std::uint16_t>(sign | 0x7C00u);
  } else if (magnitude > 0x477FEFFFu) {  // rounds to inf: max finite + a half-ulp with odd lsb
    remainder = 0x80000000u;
    result = sign | 0x7BFFu;
  } else if (magnitude >= 0x38800000u) {  // normal in f16
    remainder = magnitude << 19;
    result = sign | ((magnitude - 0x38000000u) >> 13);
  } else if (magnitude < 0x33000001u) {  // at most half the smallest subnormal: signed zero
    remainder = magnitude;
    result = sign;
  } else {  // subnormal in f16
    std::uint32_t exponent = magnitude >> 23;
    std::uint32_t shift = 0x7Eu - exponent;
    std::uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    remainder = mantissa << (32u - shift);
    result = (sign | (mantissa >> shift)) & 0xFFFFu;
  }
  return round_nearest_even(result, remainder);
}

float f16_bits_to_float(std::uint16_t bits) {
  std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  std::uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0x1Fu) {  // inf / NaN (payload kept)
    return bits_float(sign | 0x7F800000u | (mantissa << 13));
  }
  if (exponent == 0) {
    if (mantissa == 0) return bits_float(sign);
    // Subnormal: mantissa * 2^-24, exact in f32.
    float magnitude = static_cast<float>(mantissa) * bits_float(0x33800000u);  // 2^-24
    return sign ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

}  // namespace oomlab
