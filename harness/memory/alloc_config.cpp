// OOMLAB_ALLOC_CONF parsing, in PYTORCH_CUDA_ALLOC_CONF's "key:value,key:value" syntax with
// PyTorch's keys and meanings (c10/core/AllocatorConfig.cpp, c10/cuda/CUDAAllocatorConfig.cpp).
#include "harness/memory/alloc_config.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <utility>
#include <vector>

#include "harness/memory/alloc_rounding.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/user_text.hpp"

namespace oomlab::memory {
namespace {

// PyTorch's floor for max_split_size_mb and max_non_split_rounding_mb: kLargeBuffer (20 MiB).
constexpr std::size_t kMinSplitSizeMb = 20;
constexpr std::size_t kMaxRegisterThreads = 128;  // CUDAAllocatorConfig::pinned_max_register_threads

[[noreturn]] void reject(std::string_view text, const std::string& why) {
  throw std::invalid_argument("invalid allocator settings " + quote_user_text(text) + ": " + why +
                              " (expected e.g. max_split_size_mb:128,expandable_segments:true)");
}

// A whole number; `what` names it in messages ("max_split_size_mb", "a division count").
std::size_t parse_count(std::string_view text, std::string_view what, std::string_view value,
                        std::size_t limit, const char* unit) {
  if (value.empty()) reject(text, std::string(what) + " needs a value");
  std::size_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') {
      reject(text, std::string(what) + " must be a whole number" + unit + ", not " + quote_user_text(value));
    }
    n = n * 10 + static_cast<std::size_t>(c - '0');
    if (n > limit) reject(text, std::string(what) + " is too large (at most " + std::to_string(limit) + ")");
  }
  return n;
}

// max_split_size_mb and max_non_split_rounding_mb: MiB, at least 20.
std::size_t parse_split_megabytes(std::string_view text, std::string_view key, std::string_view value) {
  const std::size_t mb = parse_count(text, key, value, std::size_t{1} << 40, " of MiB");
  if (mb < kMinSplitSizeMb) {
    reject(text, std::string(key) + " must be >= " + std::to_string(kMinSplitSizeMb) + ", got " +
                     std::to_string(mb));
  }
  return mb * MiB;
}

bool parse_bool(std::string_view text, std::string_view key, std::string_view value) {
  if (value == "true" || value == "True" || value == "1") return true;
  if (value == "false" || value == "False" || value == "0") return false;
  reject(text, std::string(key) + " must be True or False, not " + quote_user_text(value));
}

// garbage_collection_threshold: a fraction strictly between 0 and 1.
double parse_fraction(std::string_view text, std::string_view key, std::string_view value) {
  const std::string copy(value);
  char* end = nullptr;
  const double fraction = copy.empty() ? 0 : std::strtod(copy.c_str(), &end);
  const bool number = !copy.empty() && end == copy.c_str() + copy.size() &&
                      copy.find_first_not_of("0123456789.") == std::string::npos;
  if (!number || !(fraction > 0 && fraction < 1)) {
    reject(text, std::string(key) + " must be a fraction between 0 and 1 (exclusive), not " + quote_user_text(value));
  }
  return fraction;
}

// One divisions count: a power of two, or 0 (off) where a list allows it.
std::size_t parse_divisions(std::string_view text, std::string_view value, bool zero_allowed) {
  const std::size_t n = parse_count(text, "roundup_power2_divisions", value, std::size_t{1} << 20, "");
  if (!(is_power_of_two(n) || (zero_allowed && n == 0))) {
    reject(text, "roundup_power2_divisions must be a power of two" + std::string(zero_allowed ? " or 0" : "") +
                     ", not " + quote_user_text(value));
  }
  return n;
}

// "[256:1,512:2,>:4]": interval start in MiB (a power of two) -> divisions. The first entry
// also covers every smaller interval; ">" covers every interval after the previous entry.
RoundupTable parse_divisions_list(std::string_view text, std::string_view value) {
  RoundupTable table{};
  if (value.size() < 2 || value.back() != ']') reject(text, "roundup_power2_divisions list has no closing ']'");
  std::string_view rest = value.substr(1, value.size() - 2);
  bool first = true;
  std::size_t last_index = 0;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view entry = trim_blanks(rest.substr(0, comma));
    const std::size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      reject(text, "roundup_power2_divisions entry " + quote_user_text(entry) + " is not MiB:divisions");
    }
    const std::string_view boundary = trim_blanks(entry.substr(0, colon));
    const std::size_t divisions = parse_divisions(text, trim_blanks(entry.substr(colon + 1)), true);
    if (boundary == ">") {
      for (std::size_t i = last_index + 1; i < kRoundupIntervals; ++i) table[i] = divisions;
    } else {
      const std::size_t mib =
          parse_count(text, "a roundup_power2_divisions interval", boundary, std::size_t{1} << 40, " of MiB");
      if (!is_power_of_two(mib)) {
        reject(text, "roundup_power2_divisions intervals must be powers of two, not " + quote_user_text(boundary));
      }
      const std::size_t index = std::min(log2_floor(mib), kRoundupIntervals - 1);
      if (first) {
        for (std::size_t i = 0; i < index; ++i) table[i] = divisions;
        first = false;
      }
      table[index] = divisions;
      last_index = index;
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return table;
}

RoundupTable parse_roundup(std::string_view text, std::string_view value) {
  if (!value.empty() && value.front() == '[') return parse_divisions_list(text, value);
  RoundupTable table{};
  table.fill(parse_divisions(text, value, false));
  return table;
}

// The keys that act on a simulated device. Returns false when `key` is not one of them.
bool apply_key(std::string_view text, std::string_view key, std::string_view value, AllocatorConfig& config) {
  if (key == "max_split_size_mb") {
    config.max_split_size = parse_split_megabytes(text, key, value);
  } else if (key == "max_non_split_rounding_mb") {
    config.max_non_split_rounding = parse_split_megabytes(text, key, value);
  } else if (key == "garbage_collection_threshold") {
    config.garbage_collection_threshold = parse_fraction(text, key, value);
  } else if (key == "roundup_power2_divisions") {
    config.roundup_power2_divisions = parse_roundup(text, value);
  } else if (key == "expandable_segments") {
    config.expandable_segments = parse_bool(text, key, value);
  } else if (key == "caching") {
    config.caching = parse_bool(text, key, value);
  } else if (key == "trace_capacity") {
    constexpr std::size_t kMaxEvents = std::size_t{1} << 32;
    config.trace_capacity = parse_count(text, key, value, kMaxEvents, " of events");
  } else if (key == "backend") {
    if (value == "cudaMallocAsync" || value == "hipMallocAsync") {
      reject(text, "backend:" + std::string(value) + " is CUDA's stream-ordered allocator, which oomlab does "
                   "not model; oomlab simulates the native caching allocator (backend:native)");
    }
    if (value != "native") reject(text, "backend must be native, not " + quote_user_text(value));
  } else {
    return false;
  }
  return true;
}

// PyTorch keys with nothing to simulate: checked like PyTorch checks them, then noted.
bool note_key(std::string_view text, std::string_view key, std::string_view value, AllocatorConfig& config) {
  std::string why;
  if (key == "release_lock_on_cudamalloc" || key == "release_lock_on_hipmalloc") {
    parse_bool(text, key, value);
    why = "the lock around cudaMalloc changes no allocation decision";
  } else if (key == "pinned_use_cuda_host_register" || key == "pinned_use_hip_host_register" ||
             key == "pinned_use_background_threads" || key == "graph_capture_record_stream_reuse") {
    parse_bool(text, key, value);
    why = key == "graph_capture_record_stream_reuse" ? "CUDA graph capture is not simulated"
                                                     : "pinned host memory is not simulated";
  } else if (key == "pinned_num_register_threads") {
    const std::size_t threads = parse_count(text, key, value, kMaxRegisterThreads, " of threads");
    if (!is_power_of_two(threads)) reject(text, "pinned_num_register_threads must be a power of two");
    why = "pinned host memory is not simulated";
  } else if (key == "pinned_reserve_segment_size_mb") {
    if (parse_count(text, key, value, std::size_t{1} << 40, " of MiB") == 0) {
      reject(text, "pinned_reserve_segment_size_mb must be greater than 0");
    }
    why = "pinned host memory is not simulated";
  } else {
    return false;
  }
  config.notes.push_back(std::string(key) + ":" + std::string(value) + " accepted and ignored (" + why + ")");
  return true;
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

// The next comma outside brackets (a roundup_power2_divisions list holds commas).
std::size_t top_level_comma(std::string_view text) {
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']' && depth > 0) --depth;
    if (text[i] == ',' && depth == 0) return i;
  }
  return std::string_view::npos;
}

// The shortest decimal that reads back as `value` (0.6, not 0.59999999999999998).
std::string shortest_decimal(double value) {
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string divisions_to_string(const RoundupTable& table) {
  bool uniform = true;
  for (std::size_t d : table) uniform = uniform && d == table[0];
  if (uniform) return std::to_string(table[0]);
  std::string list = "[";
  for (std::size_t i = 0; i < kRoundupIntervals; ++i) {
    list += (i ? "," : "") + std::to_string(std::size_t{1} << i) + ":" + std::to_string(table[i]);
  }
  return list + "]";
}

// The parse itself; parse_alloc_conf names the source in its errors.
AllocatorConfig parse_settings(std::string_view text, AllocatorConfig config) {
  // A key given twice in one text is a mistake ("last wins" would hide it); a key here that
  // overrides `config` (from the environment) is layering and fine.
  std::vector<std::pair<std::string_view, std::string_view>> given;  // (key, value)
  std::string_view rest = text;
  while (!trim_blanks(rest).empty()) {
    const std::size_t comma = top_level_comma(rest);
    const std::string_view item = trim_blanks(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty() || (comma != std::string_view::npos && trim_blanks(rest).empty())) {
      reject(text, "empty entry between commas");
    }
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) reject(text, quote_user_text(item) + " has no ':value'");
    const std::string_view key = trim_blanks(item.substr(0, colon));
    const std::string_view value = trim_blanks(item.substr(colon + 1));
    reject_repeated_key(text, given, key, value);
    given.emplace_back(key, value);
    if (!apply_key(text, key, value, config) && !note_key(text, key, value, config)) {
      reject(text, "unknown key " + quote_user_text(key) +
                       " (known: max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions, "
                       "garbage_collection_threshold, expandable_segments, backend, caching, "
                       "trace_capacity, and PyTorch's pinned_* and release_lock_on_cudamalloc)");
    }
  }
  return config;
}

}  // namespace

std::string AllocatorConfig::to_string() const {
  // Settings at their defaults stay out, so a record's alloc_conf reads as it always did.
  const AllocatorConfig defaults;
  std::string out;
  const auto add = [&out](const std::string& item) { out += (out.empty() ? "" : ",") + item; };
  if (max_split_size != kUnlimited) add("max_split_size_mb:" + std::to_string(max_split_size / MiB));
  if (max_non_split_rounding != defaults.max_non_split_rounding) {
    add("max_non_split_rounding_mb:" + std::to_string(max_non_split_rounding / MiB));
  }
  if (roundup_power2_divisions != defaults.roundup_power2_divisions) {
    add("roundup_power2_divisions:" + divisions_to_string(roundup_power2_divisions));
  }
  if (garbage_collection_threshold != 0) {
    add("garbage_collection_threshold:" + shortest_decimal(garbage_collection_threshold));
  }
  add(std::string("expandable_segments:") + (expandable_segments ? "true" : "false"));
  if (!caching) add("caching:false");
  if (trace_capacity != defaults.trace_capacity) add("trace_capacity:" + std::to_string(trace_capacity));
  return out;
}

AllocatorConfig parse_alloc_conf(std::string_view text, AllocatorConfig config, std::string_view source) {
  try {
    return parse_settings(text, config);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(source) + ": " + e.what());
  }
}

AllocatorConfig alloc_conf_from_env(AllocatorConfig base) {
  if (const char* text = std::getenv("OOMLAB_ALLOC_CONF")) base = parse_alloc_conf(text, base);
  const char* no_caching = std::getenv("OOMLAB_NO_MEMORY_CACHING");
  if (no_caching != nullptr && *no_caching != '\0' && std::string_view(no_caching) != "0") base.caching = false;
  return base;
}

}  // namespace oomlab::memory
