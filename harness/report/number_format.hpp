// Numbers as the report and compare tables print them. Byte sizes go through format_size
// (harness/memory/size.hpp), the one byte formatter; these are for everything else.
#pragma once
#include <cstdint>
#include <string>

namespace oomlab::report {

// Up to `significant` significant digits, no exponent for everyday magnitudes: "412.5",
// "0.0123", "16", "1.23e+09" only beyond 1e9.
std::string format_number(double value, int significant = 4);
// A relative change as a signed percentage: 0.0123 -> "+1.2%", -0.5 -> "-50.0%".
std::string format_percent_change(double change);
// A ratio: "1.023x".
std::string format_ratio(double ratio);
// A byte count kept as a metric (a double, from a record: any value) as a byte count: negatives
// and NaN as 0, beyond 2^64-1 as the largest double below it.
std::uint64_t metric_byte_count(double bytes);

}  // namespace oomlab::report
