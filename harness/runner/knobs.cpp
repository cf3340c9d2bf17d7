#include "harness/runner/knobs.hpp"

#include <charconv>
#include <set>
#include <stdexcept>

#include "harness/memory/user_text.hpp"

namespace oomlab {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : ", ") + name;
  return joined;
}

bool parse_boolean(std::string_view text, bool& value) {
  if (text == "true" || text == "1" || text == "on" || text == "yes") {
    value = true;
  } else if (text == "false" || text == "0" || text == "off" || text == "no") {
    value = false;
  } else {
    return false;
  }
  return true;
}

// The value in canonical text, or throws naming the knob and what it accepts.
std::string checked_value(const std::string& scenario, const KnobSpec& spec, std::string_view text) {
  const auto reject = [&](const std::string& why) {
    throw std::invalid_argument(scenario + ": knob " + spec.name + "=" + quote_user_text(text) +
                                ": " + why + " (expected " + spec.accepted() + ")");
  };
  switch (spec.kind) {
    case KnobSpec::Kind::integer: {
      std::int64_t value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (text.empty() || error != std::errc() || end != text.data() + text.size()) reject("not a whole number");
      if (value < spec.min || value > spec.max) reject("out of range");
      if (value % spec.multiple_of != 0) reject("not a multiple of " + std::to_string(spec.multiple_of));
      return std::to_string(value);
    }
    case KnobSpec::Kind::choice:
      for (const std::string& choice : spec.choices) {
        if (text == choice) return choice;
      }
      if (spec.other_value) {
        try {
          return spec.other_value(std::string(text));
        } catch (const std::invalid_argument& e) {
          throw std::invalid_argument(scenario + ": knob " + spec.name + ": " + e.what());
        }
      }
      reject("not a known value");
      break;
    case KnobSpec::Kind::boolean: {
      bool value = false;
      if (!parse_boolean(text, value)) reject("not true or false");
      return value ? "true" : "false";
    }
  }
  reject("unknown kind");
  return {};
}

}  // namespace

KnobSpec KnobSpec::integer(std::string name, std::string description, std::int64_t min, std::int64_t max,
                           std::int64_t multiple_of) {
  KnobSpec spec;
  spec.multiple_of = multiple_of;
  spec.name = std::move(name);
  spec.description = std::move(description);
  spec.kind = Kind::integer;
  spec.min = min;
  spec.max = max;
  return spec;
}

KnobSpec KnobSpec::choice(std::string name, std::string description, std::vector<std::string> choices) {
  KnobSpec spec;
  spec.name = std::move(name);
  spec.description = std::move(description);
  spec.kind = Kind::choice;
  spec.choices = std::move(choices);
  return spec;
}

KnobSpec KnobSpec::choice_or(std::string name, std::string description, std::vector<std::string> choices,
                             std::string other_accepted, std::function<std::string(const std::string&)> other_value) {
  KnobSpec spec = choice(std::move(name), std::move(description), std::move(choices));
  spec.other_accepted = std::move(other_accepted);
  spec.other_value = std::move(other_value);
  return spec;
}

KnobSpec KnobSpec::boolean(std::string name, std::string description) {
  KnobSpec spec;
  spec.name = std::move(name);
  spec.description = std::move(description);
  spec.kind = Kind::boolean;
  return spec;
}

std::string KnobSpec::accepted() const {
  switch (kind) {
    case Kind::integer:
      return (multiple_of > 1 ? "a multiple of " + std::to_string(multiple_of) + " in "
                              : std::string("a whole number ")) +
             std::to_string(min) + ".." + std::to_string(max);
    case Kind::choice: return "one of " + join(choices) + (other_value ? ", or " + other_accepted : "");
    case Kind::boolean: return "true or false";
  }
  return "?";
}

const std::string& KnobValues::text(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::invalid_argument("knob '" + name + "' has no value in this run");
  return it->second;
}

std::int64_t KnobValues::integer(const std::string& name) const { return std::stoll(text(name)); }

bool KnobValues::boolean(const std::string& name) const { return text(name) == "true"; }

KnobSettings parse_knob_settings(std::string_view text) {
  KnobSettings settings;
  std::set<std::string> seen;
  std::string_view rest = text;
  while (!trim_blanks(rest).empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim_blanks(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const std::size_t equals = item.find('=');
    if (item.empty() || equals == std::string_view::npos || equals == 0) {
      throw std::invalid_argument("--set " + quote_user_text(text) +
                                  ": expected knob=value pairs separated by commas, e.g. batch=24,dtype=bf16");
    }
    std::string name(trim_blanks(item.substr(0, equals)));
    if (!seen.insert(name).second) {
      throw std::invalid_argument("--set: knob " + quote_user_text(name) + " is given twice");
    }
    settings.emplace_back(std::move(name), std::string(trim_blanks(item.substr(equals + 1))));
  }
  return settings;
}

KnobValues resolve_knobs(const std::string& scenario, const std::vector<KnobSpec>& specs,
                         const std::map<std::string, std::string>& variant_values,
                         const KnobSettings& settings) {
  std::map<std::string, std::string> values;
  auto find_spec = [&](const std::string& name) -> const KnobSpec* {
    for (const KnobSpec& spec : specs) {
      if (spec.name == name) return &spec;
    }
    return nullptr;
  };
  for (const auto& [name, value] : variant_values) {
    const KnobSpec* spec = find_spec(name);
    if (!spec) throw std::logic_error(scenario + ": a variant sets undeclared knob '" + name + "'");
    values[name] = checked_value(scenario, *spec, value);
  }
  for (const auto& [name, value] : settings) {
    const KnobSpec* spec = find_spec(name);
    if (!spec) {
      std::vector<std::string> names;
      for (const KnobSpec& known : specs) names.push_back(known.name);
      throw std::invalid_argument(scenario + " has no knob " + quote_user_text(name) + "; its knobs: " +
                                  (names.empty() ? std::string("none") : join(names)));
    }
    values[name] = checked_value(scenario, *spec, value);
  }
  for (const KnobSpec& spec : specs) {
    if (!values.count(spec.name)) {
      throw std::logic_error(scenario + ": knob '" + spec.name + "' has no value for this variant");
    }
  }
  return KnobValues(std::move(values));
}

namespace {

template <class Pairs>
std::string joined_pairs(const Pairs& pairs) {
  std::string text;
  for (const auto& [name, value] : pairs) text += (text.empty() ? "" : ",") + name + "=" + value;
  return text;
}

}  // namespace

std::string describe_knobs(const std::map<std::string, std::string>& values) { return joined_pairs(values); }

std::string describe_knob_settings(const KnobSettings& settings) { return joined_pairs(settings); }

}  // namespace oomlab
