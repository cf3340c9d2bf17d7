#include "harness/report/chart_style.hpp"

#include <cmath>

#include "harness/memory/size.hpp"
#include "harness/report/number_format.hpp"

namespace oomlab::report {

const char* tag_colour(memory::Tag tag) {
  switch (tag) {
    case memory::Tag::weights: return "#1f77b4";
    case memory::Tag::grads: return "#ff7f0e";
    case memory::Tag::optimizer: return "#2ca02c";
    case memory::Tag::activations: return "#9467bd";
    case memory::Tag::workspace: return "#8c564b";
    case memory::Tag::data: return "#e377c2";
    case memory::Tag::retained: return "#bcbd22";
    case memory::Tag::other: return "#7f7f7f";
  }
  return "#7f7f7f";
}

namespace {

double nice_step(double max, int count) {
  if (!(max > 0)) return 1;
  const double raw = max / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * power >= raw) return factor * power;
  }
  return 10 * power;
}

}  // namespace

std::vector<Tick> number_ticks(double max, int count) {
  const double step = nice_step(max, count);
  std::vector<Tick> ticks;
  for (int i = 0; i * step < max + step * 0.999 || i == 0; ++i) {
    ticks.push_back({i * step, format_number(i * step, 4)});
    if (i * step >= max) break;
  }
  return ticks;
}

std::vector<Tick> byte_ticks(double max, std::string& unit, int count) {
  double scale = 1;
  unit = "B";
  for (const auto& [name, bytes] : {std::pair{"GiB", double(GiB)}, {"MiB", double(MiB)}, {"KiB", double(KiB)}}) {
    if (max >= bytes) {
      unit = name;
      scale = bytes;
      break;
    }
  }
  std::vector<Tick> ticks = number_ticks(max / scale, count);
  for (Tick& tick : ticks) {
    tick.label = tick.value == 0 ? "0" : tick.label + " " + unit;
    tick.value *= scale;
  }
  return ticks;
}

std::string bytes_label(std::uint64_t bytes) {
  std::string text = format_size(bytes);  // "12.70GiB": the one formatter, with a space for charts
  const std::size_t unit = text.find_first_not_of("0123456789.-");
  if (unit != std::string::npos && unit > 0) text.insert(unit, " ");
  return text;
}

}  // namespace oomlab::report
