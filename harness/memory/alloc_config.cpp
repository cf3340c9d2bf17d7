// OOMLAB_ALLOC_CONF parsing, in PYTORCH_CUDA_ALLOC_CONF's "key:value,key:value" syntax.
#include "harness/memory/alloc_config.hpp"

#include <cstdlib>
#include <stdexcept>

#include "harness/memory/size.hpp"

namespace oomlab::memory {
namespace {

// PyTorch's floor for max_split_size_mb: below the 20 MiB large-segment size it would stop
// every large segment from being split.
constexpr std::size_t kMinMaxSplitSizeMb = 20;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

[[noreturn]] void reject(std::string_view text, const std::string& why) {
  throw std::invalid_argument("invalid OOMLAB_ALLOC_CONF '" + std::string(text) + "': " + why +
                              " (expected e.g. max_split_size_mb:128,expandable_segments:true)");
}

std::size_t parse_megabytes(std::string_view text, std::string_view value) {
  if (value.empty()) reject(text, "max_split_size_mb needs a value");
  std::size_t mb = 0;
  for (char c : value) {
    if (c < '0' || c > '9') {
      reject(text, "max_split_size_mb must be a whole number of MiB, not '" + std::string(value) + "'");
    }
    mb = mb * 10 + static_cast<std::size_t>(c - '0');
    if (mb > (std::size_t{1} << 40)) reject(text, "max_split_size_mb is too large");
  }
  if (mb < kMinMaxSplitSizeMb) {
    reject(text, "max_split_size_mb must be >= " + std::to_string(kMinMaxSplitSizeMb) + ", got " +
                     std::string(value));
  }
  return mb * MiB;
}

bool parse_bool(std::string_view text, std::string_view key, std::string_view value) {
  if (value == "true" || value == "True" || value == "1") return true;
  if (value == "false" || value == "False" || value == "0") return false;
  reject(text, std::string(key) + " must be true or false, not '" + std::string(value) + "'");
}

}  // namespace

std::string AllocatorConfig::to_string() const {
  std::string out;
  if (max_split_size != kUnlimited) out += "max_split_size_mb:" + std::to_string(max_split_size / MiB);
  if (!out.empty()) out += ",";
  out += std::string("expandable_segments:") + (expandable_segments ? "true" : "false");
  return out;
}

AllocatorConfig parse_alloc_conf(std::string_view text, AllocatorConfig config) {
  std::string_view rest = text;
  while (!trim(rest).empty()) {
    std::size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty() || (comma != std::string_view::npos && trim(rest).empty())) {
      reject(text, "empty entry between commas");
    }
    std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) reject(text, "'" + std::string(item) + "' has no ':value'");
    std::string_view key = trim(item.substr(0, colon));
    std::string_view value = trim(item.substr(colon + 1));
    if (key == "max_split_size_mb") {
      config.max_split_size = parse_megabytes(text, value);
    } else if (key == "expandable_segments") {
      config.expandable_segments = parse_bool(text, key, value);
    } else {
      reject(text, "unknown key '" + std::string(key) +
                       "' (known: max_split_size_mb, expandable_segments)");
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
