// What every report chart shares: the colour of each tag (matplotlib's tab10, which readers
// know), the axis ticks at round values with their units, and the plot margins.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/memory/tags.hpp"

namespace oomlab::report {

const char* tag_colour(memory::Tag tag);
inline constexpr const char* kFreeColour = "#d9d9d9";    // reserved but not allocated
inline constexpr const char* kBudgetColour = "#111111";  // the budget line
inline constexpr const char* kOomColour = "#d62728";     // the OOM marker
inline constexpr const char* kGridColour = "#e5e5e5";

struct Tick {
  double value = 0;
  std::string label;
};

// Round ticks from 0 to at least `max` (about `count` of them): 1, 2 or 5 times a power of ten.
std::vector<Tick> number_ticks(double max, int count = 5);
// The same for bytes, in one binary unit chosen for `max`: "0", "2 GiB", "4 GiB"; `unit` gets
// "GiB" (or "MiB", "KiB", "B") for the axis title.
std::vector<Tick> byte_ticks(double max, std::string& unit, int count = 5);
// "12.70 GiB": the tick unit style for labels on bars and lines.
std::string bytes_label(std::uint64_t bytes);

}  // namespace oomlab::report
