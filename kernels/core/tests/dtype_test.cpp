// dtype names and the bf16/f16 conversions: exhaustive round trips over every 16-bit pattern,
// and the round-to-nearest-even edge cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/core/dtype.hpp"

namespace oomlab {
namespace {

float from_bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

TEST(DType, SizesNamesAndParsing) {
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::f16), 2u);
  EXPECT_EQ(dtype_size(DType::i8), 1u);
  EXPECT_EQ(dtype_size(DType::i32), 4u);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::i8, DType::i32, DType::i64}) {
    EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype);
  }
  EXPECT_FALSE(parse_dtype("fp32").has_value());
  EXPECT_FALSE(parse_dtype("").has_value());
  EXPECT_TRUE(is_floating(DType::bf16));
  EXPECT_FALSE(is_floating(DType::i32));
}

TEST(DType, Bf16RoundTripsEveryPattern) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    float value = bf16_bits_to_float(static_cast<std::uint16_t>(bits));
    std::uint16_t back = float_to_bf16_bits(value);
    if (std::isnan(value)) {
      EXPECT_EQ(back, 0x7FFF) << "NaN pattern " << bits << " becomes the canonical NaN";
    } else {
      ASSERT_EQ(back, bits) << "bf16 pattern " << bits;
    }
  }
}

TEST(DType, F16RoundTripsEveryPattern) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    float value = f16_bits_to_float(static_cast<std::uint16_t>(bits));
    std::uint16_t back = float_to_f16_bits(value);
    if (std::isnan(value)) {
      EXPECT_EQ(back, 0x7FFF) << "NaN pattern " << bits;
    } else {
      ASSERT_EQ(back, bits) << "f16 pattern " << bits;
    }
  }
}

TEST(DType, F16DecodesKnownValues) {
  EXPECT_EQ(f16_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(f16_bits_to_float(0xC000), -2.0f);
  EXPECT_EQ(f16_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_bits_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_bits_to_float(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(f16_bits_to_float(0x8000)));
}

TEST(DType, Bf16RoundsHalfToEven) {
  // 1.0 = 0x3F800000; the bf16 ulp at 1.0 is 2^-7 (bit 16 of the f32 pattern).
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3F808000)), 0x3F80);  // tie, even stays down
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3F818000)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3F808001)), 0x3F81);  // above the tie
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3F807FFF)), 0x3F80);  // below the tie
  EXPECT_EQ(float_to_bf16_bits(-1.0f), 0xBF80);
  // The largest finite f32 rounds up to infinity.
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x7FC00001)), 0x7FFF);  // NaN -> canonical NaN
  EXPECT_EQ(float_to_bf16_bits(from_bits(0xFF800001)), 0x7FFF);
}

TEST(DType, F16RoundsHalfToEven) {
  // The f16 ulp at 1.0 is 2^-10 = bit 13 of the f32 mantissa.
  EXPECT_EQ(float_to_f16_bits(from_bits(0x3F801000)), 0x3C00);  // tie, even stays
  EXPECT_EQ(float_to_f16_bits(from_bits(0x3F803000)), 0x3C02);  // tie, odd rounds up
  EXPECT_EQ(float_to_f16_bits(from_bits(0x3F801001)), 0x3C01);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_f16_bits(65519.0f), 0x7BFF);  // below the halfway point to 65536
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7C00);  // halfway: rounds to infinity
  EXPECT_EQ(float_to_f16_bits(-1e10f), 0xFC00);
  // Subnormals: 2^-25 is half the smallest subnormal (tie to even -> 0); just above -> 1.
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(float_to_f16_bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp ties to even 2
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16_bits(std::numeric_limits<float>::quiet_NaN()), 0x7FFF);
}

}  // namespace
}  // namespace oomlab
