// Element types and their host-side conversions (bf16/f16 are stored as raw 16-bit patterns
// on the host so that host code needs no CUDA headers).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace oomlab {

enum class DType : std::uint8_t { f32, bf16, f16, i8, i32, i64 };

std::size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);
bool is_floating(DType dtype);

// Round-to-nearest-even conversions, NaN preserved; match the CUDA intrinsics bit for bit.
std::uint16_t float_to_bf16_bits(float value);
float bf16_bits_to_float(std::uint16_t bits);
std::uint16_t float_to_f16_bits(float value);
float f16_bits_to_float(std::uint16_t bits);

}  // namespace oomlab
