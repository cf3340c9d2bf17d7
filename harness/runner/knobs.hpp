// Knobs: the named, typed settings a scenario exposes (batch, seq, dtype, model preset, ...), so
// a user can ask their own question ("batch 24 in bf16 on a 16 GB card?") instead of only the
// story's. A variant is a named set of knob values; `--set batch=24,dtype=bf16` overrides them.
// Every value is validated here, once, with one clear line for a bad one; the scenario then
// reads typed values from the run's KnobValues.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oomlab {

struct KnobSpec {
  enum class Kind { integer, choice, boolean };
  std::string name;         // "batch"
  std::string description;  // one line for `oomlab list SCENARIO`
  Kind kind = Kind::integer;
  std::int64_t min = 1;     // integer: inclusive range
  std::int64_t max = std::numeric_limits<std::int32_t>::max();
  std::int64_t multiple_of = 1;      // integer: only multiples of this are accepted
  std::vector<std::string> choices;  // choice: the accepted values
  // choice: a value outside `choices` goes here (when set), which returns the value to run with and
  // record, or throws std::invalid_argument with one line; `other_accepted` says what it takes.
  // A model knob: a preset, or a config.json path recorded with what it holds.
  std::function<std::string(const std::string&)> other_value;
  std::string other_accepted;

  static KnobSpec integer(std::string name, std::string description, std::int64_t min,
                          std::int64_t max, std::int64_t multiple_of = 1);
  static KnobSpec choice(std::string name, std::string description, std::vector<std::string> choices);
  static KnobSpec choice_or(std::string name, std::string description, std::vector<std::string> choices,
                            std::string other_accepted, std::function<std::string(const std::string&)> other_value);
  static KnobSpec boolean(std::string name, std::string description);
  // "a whole number 1..4096", "a multiple of 4 in 4..8192", "one of f32, bf16, f16", "true or false".
  std::string accepted() const;
};

// One run's knob values, validated against the scenario's specs; read by the scenario.
class KnobValues {
 public:
  KnobValues() = default;
  explicit KnobValues(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  // Throw std::invalid_argument naming the knob when it is missing (a scenario bug).
  std::int64_t integer(const std::string& name) const;
  bool boolean(const std::string& name) const;
  const std::string& text(const std::string& name) const;
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  const std::map<std::string, std::string>& all() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// "batch=24,dtype=bf16" -> [(batch, 24), (dtype, bf16)]. Repeated --set options are joined by
// the caller. Throws std::invalid_argument for an entry without '=' or a name given twice.
using KnobSettings = std::vector<std::pair<std::string, std::string>>;
KnobSettings parse_knob_settings(std::string_view text);

// The variant's values at its scale with `settings` applied over them, each checked against
// `specs`: an unknown knob lists the known ones, a bad value says what is accepted. `scenario`
// names the scenario in messages. Booleans are normalised to "true"/"false".
KnobValues resolve_knobs(const std::string& scenario, const std::vector<KnobSpec>& specs,
                         const std::map<std::string, std::string>& variant_values,
                         const KnobSettings& settings);

// "batch=24,dtype=bf16" (sorted by name): how a run's knobs read on one line.
std::string describe_knobs(const std::map<std::string, std::string>& values);
// Settings back in parse_knob_settings' syntax (in their order).
std::string describe_knob_settings(const KnobSettings& settings);

}  // namespace oomlab
