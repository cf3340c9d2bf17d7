// `--knob batch=1,2,4`: which knob the snapshots were recorded at, one value per snapshot in the
// order the files were given.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace oomlab::extrapolate {

struct KnobPoints {
  std::string name;                   // "batch", "seq", ... (a name the user chose)
  std::vector<std::int64_t> values;   // one per snapshot, in the files' order
};

// Largest knob value anything here accepts: sizes are evaluated in 128-bit arithmetic, and a
// batch or sequence beyond this is no plan for one GPU.
constexpr std::int64_t kLargestKnobValue = std::int64_t{1} << 31;

// "batch=1,2,4" for `snapshots` files. Throws std::invalid_argument (one line) unless it is a
// name, '=', and exactly one distinct whole number >= 1 per snapshot.
KnobPoints parse_knob_points(const std::string& text, std::size_t snapshots);

// "--at 32": a whole number >= 1, at most kLargestKnobValue. Throws std::invalid_argument.
std::int64_t parse_knob_value(const std::string& text, const std::string& option);

}  // namespace oomlab::extrapolate
