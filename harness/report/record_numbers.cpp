#include "harness/report/record_numbers.hpp"

#include <cstdint>
#include <limits>

#include "harness/report/input_error.hpp"
#include "harness/runner/json_text.hpp"

namespace oomlab::report {

namespace {

using Json = nlohmann::ordered_json;

struct IntegerRange {
  std::int64_t low;
  std::uint64_t high;
  const char* says;
};

constexpr IntegerRange kBytes{0, std::numeric_limits<std::uint64_t>::max(),
                              "not a byte count (a whole number from 0 to 2^64-1)"};
constexpr IntegerRange kCount{0, std::numeric_limits<std::uint64_t>::max(),
                              "not a count (a whole number from 0 to 2^64-1)"};
constexpr IntegerRange kInt{std::numeric_limits<int>::min(),
                            static_cast<std::uint64_t>(std::numeric_limits<int>::max()),
                            "not a whole number that fits in 32 bits"};
constexpr IntegerRange kStep{-1, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                             "not a step (a whole number from -1 to 2^63-1)"};

bool in_range(const Json& value, const IntegerRange& range) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>() <= range.high;
  if (value.is_number_integer()) return value.get<std::int64_t>() >= range.low;  // negative here
  return false;  // a float (1.5, 1e308, 2^64+5 as nlohmann reads it), a string, ...
}

void check(const Json& parent, const char* object, const std::string& key, const IntegerRange& range,
           const std::string& file) {
  const Json* holder = &parent;
  if (object) {
    if (!parent.contains(object) || !parent[object].is_object()) return;
    holder = &parent[object];
  }
  if (!holder->contains(key) || (*holder)[key].is_null() || in_range((*holder)[key], range)) return;
  const std::string name = object ? std::string(object) + "." + key : key;
  std::string shown = json_text((*holder)[key]);
  if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
  throw InputError(file + ": " + name + " is " + shown + ", " + range.says);
}

}  // namespace

void check_record_numbers(const Json& record, const std::string& file) {
  if (!record.is_object()) return;
  for (const char* key : {"schema_version", "steps", "warmup_steps"}) check(record, nullptr, key, kInt, file);
  check(record, "budget", "bytes", kBytes, file);
  check(record, "device", "total_memory", kBytes, file);
  for (const char* key : {"driver_version", "runtime_version"}) check(record, "device", key, kInt, file);
  check(record, "outcome", "step", kStep, file);
  check(record, "outcome", "signal", kInt, file);
  for (const char* key : {"peak_allocated", "peak_reserved", "peak_device_used", "need", "need_reserved"}) {
    check(record, "memory", key, kBytes, file);
  }
  for (const char* key : {"num_ooms", "num_alloc_retries"}) check(record, "memory", key, kCount, file);
  if (record.contains("memory") && record["memory"].is_object()) {
    const Json& memory = record["memory"];
    if (memory.contains("per_tag_peak") && memory["per_tag_peak"].is_object()) {
      for (const auto& [tag, bytes] : memory["per_tag_peak"].items()) {
        if (!in_range(bytes, kBytes)) {
          throw InputError(file + ": memory.per_tag_peak." + tag + " is " + json_text(bytes).substr(0, 40) + ", " +
                           kBytes.says);
        }
      }
    }
  }
}

}  // namespace oomlab::report
