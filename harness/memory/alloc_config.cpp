// OOMLAB_ALLOC_CONF parsing, in PYTORCH_CUDA_ALLOC_CONF's "key:value,key:value" syntax.
#include "harness/memory/alloc_config.hpp"

#include <cstdlib>
#include <stdexcept>
#include <utility>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/memory/user_text.hpp"

namespace oomlab::memory {
namespace {

// PyTorch's floor for max_split_size_mb: below the 20 MiB large-segment size it would stop
// every large segment from being split.
constexpr std::size_t kMinMaxSplitSizeMb = 20;

[[noreturn]] void reject(std::string_view text, const std::string& why) {
  throw std::invalid_argument("invalid OOMLAB_ALLOC_CONF " + quote_user_text(text) + ": " + why +
                              " (expected e.g. max_split_size_mb:128,expandable_segments:true)");
}

std::size_t parse_megabytes(std::string_view text, std::string_view value) {
  if (value.empty()) reject(text, "max_split_size_mb needs a value");
  std::size_t mb = 0;
  for (char c : value) {
    if (c < '0' || c > '9') {
      reject(text, "max_split_size_mb must be a whole number of MiB, not " + quote_user_text(value));
    }
    mb = mb * 10 + static_cast<std::size_t>(c - '0');
    if (mb > (std::size_t{1} << 40)) reject(text, "max_split_size_mb is too large");
  }
  if (mb < kMinMaxSplitSizeMb) {
    reject(text, "max_split_size_mb must be >= " + std::to_string(kMinMaxSplitSizeMb) + ", got " +
                     std::to_string(mb));
  }
  return mb * MiB;
}

// trace_capacity: events the trace keeps (a whole number; 0 keeps none).
std::size_t parse_event_count(std::string_view text, std::string_view value) {
  constexpr std::size_t kMaxEvents = std::size_t{1} << 32;
  if (value.empty()) reject(text, "trace_capacity needs a value");
  std::size_t events = 0;
  for (char c : value) {
    if (c < '0' || c > '9') reject(text, "trace_capacity must be a whole number of events, not " + quote_user_text(value));
    events = events * 10 + static_cast<std::size_t>(c - '0');
    if (events > kMaxEvents) reject(text, "trace_capacity is too large (at most " + std::to_string(kMaxEvents) + " events)");
  }
  return events;
}

bool parse_bool(std::string_view text, std::string_view key, std::string_view value) {
  if (value == "true" || value == "True" || value == "1") return true;
  if (value == "false" || value == "False" || value == "0") return false;
  reject(text, std::string(key) + " must be true or false, not " + quote_user_text(value));
}

// `given` holds only accepted entries, so a repeat is always of a known key.
void reject_repeated_key(std::string_view text,
                         const std::vector<std::pair<std::string_view, std::string_view>>& given,
                         std::string_view key, std::string_view value) {
  for (const auto& [earlier_key, earlier_value] : given) {
    if (earlier_key != key) continue;
    reject(text, quote_user_text(key) + " is given twice (" + quote_user_text(earlier_value) +
                     ", then " + quote_user_text(value) + "): give each key once");
  }
}

}  // namespace

std::string AllocatorConfig::to_string() const {
  std::string out;
  if (max_split_size != kUnlimited) out += "max_split_size_mb:" + std::to_string(max_split_size / MiB);
  if (!out.empty()) out += ",";
  out += std::string("expandable_segments:") + (expandable_segments ? "true" : "false");
  if (trace_capacity != AllocatorConfig{}.trace_capacity) out += ",trace_capacity:" + std::to_string(trace_capacity);
  return out;
}

AllocatorConfig parse_alloc_conf(std::string_view text, AllocatorConfig config) {
  // A key given twice in one text is a mistake ("last wins" would hide it); a key here that
  // overrides `config` (from the environment) is layering and fine.
  std::vector<std::pair<std::string_view, std::string_view>> given;  // (key, value)
  std::string_view rest = text;
  while (!trim_blanks(rest).empty()) {
    std::size_t comma = rest.find(',');
    std::string_view item = trim_blanks(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty() || (comma != std::string_view::npos && trim_blanks(rest).empty())) {
      reject(text, "empty entry between commas");
    }
    std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) reject(text, quote_user_text(item) + " has no ':value'");
    std::string_view key = trim_blanks(item.substr(0, colon));
    std::string_view value = trim_blanks(item.substr(colon + 1));
    reject_repeated_key(text, given, key, value);
    given.emplace_back(key, value);
    if (key == "max_split_size_mb") {
      config.max_split_size = parse_megabytes(text, value);
    } else if (key == "expandable_segments") {
      config.expandable_segments = parse_bool(text, key, value);
    } else if (key == "trace_capacity") {
      config.trace_capacity = parse_event_count(text, value);
    } else {
      reject(text, "unknown key " + quote_user_text(key) +
                       " (known: max_split_size_mb, expandable_segments, trace_capacity)");
    }
  }
  return config;
}

AllocatorConfig alloc_conf_from_env(AllocatorConfig base) {
  const char* text = std::getenv("OOMLAB_ALLOC_CONF");
  if (text == nullptr) return base;
  return parse_alloc_conf(text, base);
}

}  // namespace oomlab::memory
