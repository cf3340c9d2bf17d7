// Grouped horizontal bars: one group per variant (or variant and GPU), one bar per series, the
// value written at each bar's end and an optional reference line (the budget). Used for the
// peaks (allocated, reserved, need) and the throughput across variants and GPUs.
#pragma once
#include <string>
#include <vector>

namespace oomlab::report {

struct BarSeries {
  std::string name;    // "peak allocated"
  std::string colour;
};

struct BarGroup {
  std::string label;                 // "broken", "fixed · NVIDIA H200"
  std::vector<double> values;        // one per series; < 0: none
  std::vector<std::string> texts;    // the value as written beside its bar
  std::vector<double> errors;        // relative error bars (the step noise); empty or < 0: none
};

struct BarChart {
  std::string title;
  std::string axis_title;  // with its unit ("throughput (images/s)"), or "memory" when `bytes`
  bool bytes = false;      // ticks in one binary unit, added to the axis title: "memory (GiB)"
  std::vector<BarSeries> series;
  std::vector<BarGroup> groups;
  double reference = -1;        // a vertical line (the budget); < 0: none
  std::string reference_label;  // "budget rtx3060-12g 11.56 GiB"
};

std::string bar_svg(const BarChart& chart);

}  // namespace oomlab::report
