// Byte sizes: the one parser and formatter used everywhere ("12GiB", "512MiB", "1.5GB", "4096").
#pragma once
#include <cstddef>
#include <cstdint>
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

// "0B", "512B", "1.50KiB", "12.00GiB": binary units, two decimals above bytes.
std::string format_size(std::size_t bytes);
// Signed variant for deltas ("+288.00MiB", "-1.00KiB").
std::string format_size_delta(std::int64_t bytes);

}  // namespace oomlab
