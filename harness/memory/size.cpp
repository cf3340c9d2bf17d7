// The one byte-size parser and formatter.
#include "harness/memory/size.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "harness/memory/user_text.hpp"

namespace oomlab {
namespace {

struct Unit {
  const char* name;
  double multiplier;
};

// Binary units (KiB...) are powers of 1024, SI units (KB...) powers of 1000, as on the box.
constexpr Unit kUnits[] = {
    {"", 1.0},      {"b", 1.0},      {"kib", 0x1p10}, {"mib", 0x1p20}, {"gib", 0x1p30},
    {"tib", 0x1p40}, {"kb", 1e3},     {"mb", 1e6},     {"gb", 1e9},     {"tb", 1e12},
};

constexpr const char* kTooLarge = "too large (a size is at most 16EiB, 64 bits of bytes)";

[[noreturn]] void reject(std::string_view text, const std::string& why) {
  throw InvalidSize("invalid size " + quote_user_text(text) + ": " + why +
                        " (expected e.g. 4096, 512MiB, 12GiB, 1.5GB)",
                    why);
}

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::size_t parse_size(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::size_t number_begin = i;
  bool seen_digit = false, seen_dot = false;
  while (i < text.size()) {
    char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      seen_digit = true;
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (i == number_begin) {
    if (i < text.size() && text[i] == '-') reject(text, "a size cannot be negative");
    if (i < text.size() && text[i] == '+') reject(text, "write it without '+'");
    reject(text, "no number");
  }
  if (!seen_digit) reject(text, "no digits");
  std::string_view number = text.substr(number_begin, i - number_begin);
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::size_t unit_end = text.size();
  while (unit_end > i && std::isspace(static_cast<unsigned char>(text[unit_end - 1]))) --unit_end;
  std::string unit = lower(text.substr(i, unit_end - i));

  double multiplier = -1;
  for (const Unit& u : kUnits) {
    if (unit == u.name) multiplier = u.multiplier;
  }
  if (multiplier < 0) {
    reject(text, "unknown unit " + quote_user_text(text.substr(i, unit_end - i)) +
                     " (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
  }

  if (!seen_dot) {
    // Integers stay exact: no trip through double for "4096" or "17179869184".
    std::size_t value = 0;
    for (char c : number) {
      std::size_t digit = static_cast<std::size_t>(c - '0');
      if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10) reject(text, kTooLarge);
      value = value * 10 + digit;
    }
    auto m = static_cast<std::size_t>(multiplier);
    if (m != 0 && value > std::numeric_limits<std::size_t>::max() / m) reject(text, kTooLarge);
    return value * m;
  }
  double value = std::strtod(std::string(number).c_str(), nullptr) * multiplier;
  if (!std::isfinite(value) || value >= 0x1p64) reject(text, kTooLarge);
  return static_cast<std::size_t>(std::round(value));
}

std::string format_size(std::size_t bytes) {
  static constexpr const char* kNames[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < KiB) return std::to_string(bytes) + "B";
  if (bytes == kSizeSaturated) return "more than 16.00EiB";
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f%s", value, kNames[unit]);
  return buffer;
}

std::string format_size_delta(std::int64_t bytes) {
  // Magnitude through unsigned arithmetic so INT64_MIN does not overflow.
  std::size_t magnitude = bytes < 0 ? std::size_t{0} - static_cast<std::size_t>(bytes)
                                    : static_cast<std::size_t>(bytes);
  return (bytes < 0 ? "-" : "+") + format_size(magnitude);
}

}  // namespace oomlab
