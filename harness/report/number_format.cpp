#include "harness/report/number_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace oomlab::report {

std::string format_number(double value, int significant) {
  if (!std::isfinite(value)) return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
  char text[64];
  const double magnitude = std::fabs(value);
  if (magnitude != 0 && (magnitude >= 1e9 || magnitude < 1e-4)) {
    std::snprintf(text, sizeof text, "%.*g", significant, value);
    return text;
  }
  // Digits after the point so that `significant` digits show, never fewer than 0.
  int decimals = 0;
  if (magnitude != 0) {
    decimals = significant - 1 - static_cast<int>(std::floor(std::log10(magnitude)));
    if (decimals < 0) decimals = 0;
  }
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  std::string out = text;
  // "16.000" -> "16", "0.01230" -> "0.0123": trailing zeros carry no information here.
  if (out.find('.') != std::string::npos) {
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  return out;
}

std::string format_percent_change(double change) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", 100.0 * change);
  return text;
}

std::string format_ratio(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3fx", ratio);
  return text;
}

std::uint64_t metric_byte_count(double bytes) {
  constexpr double kMost = 18446744073709549568.0;  // the largest double below 2^64
  return !(bytes > 0) ? 0 : static_cast<std::uint64_t>(std::min(bytes, kMost));
}

}  // namespace oomlab::report
