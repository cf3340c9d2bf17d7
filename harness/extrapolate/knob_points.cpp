#include "harness/extrapolate/knob_points.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "harness/memory/user_text.hpp"

namespace oomlab::extrapolate {

std::int64_t parse_knob_value(const std::string& text, const std::string& option) {
  const bool digits = !text.empty() && text.size() <= 10 &&
                      std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  const std::int64_t value = digits ? std::stoll(text) : 0;
  if (!digits || value < 1 || value > kLargestKnobValue) {
    throw std::invalid_argument(option + ": " + quote_user_text(text, 40) + " is not a whole number from 1 to " +
                                std::to_string(kLargestKnobValue));
  }
  return value;
}

KnobPoints parse_knob_points(const std::string& text, std::size_t snapshots) {
  const std::size_t equals = text.find('=');
  KnobPoints points;
  points.name = text.substr(0, equals);
  const bool named = equals != std::string::npos && !points.name.empty() &&
                     std::all_of(points.name.begin(), points.name.end(),
                                 [](unsigned char c) { return std::isalnum(c) != 0 || c == '_'; });
  if (!named) {
    throw std::invalid_argument("--knob " + quote_user_text(text, 60) +
                                ": expected NAME=V1,V2[,V3], one value per snapshot (batch=1,2,4)");
  }
  const std::string list = text.substr(equals + 1);
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    points.values.push_back(parse_knob_value(list.substr(start, comma - start), "--knob " + points.name));
    start = comma + 1;
  }
  if (points.values.size() != snapshots) {
    throw std::invalid_argument("--knob " + points.name + ": " + std::to_string(points.values.size()) +
                                " values for " + std::to_string(snapshots) +
                                " snapshots; give one value per snapshot, in the files' order");
  }
  std::vector<std::int64_t> sorted = points.values;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw std::invalid_argument("--knob " + points.name + ": a value is given twice; each snapshot must be "
                                "recorded at a different " + points.name);
  }
  return points;
}

}  // namespace oomlab::extrapolate
