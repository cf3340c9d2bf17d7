// Byte sizes: the one parser and formatter used everywhere ("12GiB", "512MiB", "1.5GB", "4096").
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace oomlab {

constexpr std::size_t KiB = std::size_t{1} << 10;
constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t GiB = std::size_t{1} << 30;

namespace literals {
constexpr std::size_t operator""_KiB(unsigned long long v) { return v * KiB; }
constexpr std::size_t operator""_MiB(unsigned long long v) { return v * MiB; }
constexpr std::size_t operator""_GiB(unsigned long long v) { return v * GiB; }
}  // namespace literals

// What parse_size throws: what() is the whole line, reason() only why ("unknown unit 'XB' ..."),
// for callers that say it in their own words (parse_budget).
class InvalidSize : public std::invalid_argument {
 public:
  InvalidSize(const std::string& message, std::string reason)
      : std::invalid_argument(message), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// Parses "4096", "512B", "64KiB", "12GiB", "1.5GB" (SI: GB=1e9), "2MB", "3 MiB" (case-insensitive
// units). Throws InvalidSize naming the text on anything else, including negatives, empty
// strings, unknown units and values that overflow 64 bits.
std::size_t parse_size(std::string_view text);

// Size arithmetic that cannot wrap: the one place where counts built from extents a user or a
// file gives (batch x seq x heads x seq, a tensor's bytes) are combined. Past what 64 bits hold
// a count saturates at kSizeSaturated, which no allocator grants (an allocation of it is an OOM,
// never a wrapped small request) and which format_size prints as "more than 16.00EiB".
constexpr std::size_t kSizeSaturated = std::numeric_limits<std::size_t>::max();
constexpr std::size_t saturating_add(std::size_t a, std::size_t b) {
  return a > kSizeSaturated - b ? kSizeSaturated : a + b;
}
constexpr std::size_t saturating_mul(std::size_t a, std::size_t b) {
  return b != 0 && a > kSizeSaturated / b ? kSizeSaturated : a * b;
}

// A count whose + and * saturate, for formulas that read like the sizes they add up.
struct SaturatingSize {
  std::size_t value = 0;
  constexpr SaturatingSize() = default;
  constexpr SaturatingSize(std::size_t v) : value(v) {}  // NOLINT: a count is a count
  constexpr SaturatingSize& operator+=(SaturatingSize other) { return *this = *this + other; }
  friend constexpr SaturatingSize operator+(SaturatingSize a, SaturatingSize b) {
    return saturating_add(a.value, b.value);
  }
  friend constexpr SaturatingSize operator*(SaturatingSize a, SaturatingSize b) {
    return saturating_mul(a.value, b.value);
  }
};

// "0B", "512B", "1.50KiB", "12.00GiB": binary units, two decimals above bytes; kSizeSaturated is
// "more than 16.00EiB".
std::string format_size(std::size_t bytes);
// Signed variant for deltas ("+288.00MiB", "-1.00KiB").
std::string format_size_delta(std::int64_t bytes);

}  // namespace oomlab
