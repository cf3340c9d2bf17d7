// GPU profiles and budget parsing.
#include "harness/memory/budget.hpp"

#include <stdexcept>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/user_text.hpp"

namespace oomlab::memory {
namespace {

// What one process's CUDA context takes before its first allocation (cudart, the context, lazy
// module loading on). 529 MiB is measured on an H200 (CUDA 13) as total - free after context
// creation; Ampere/Hopper datacenter parts are taken to match it. GeForce parts report
// 400-500 MiB in the same measurement elsewhere; 450 MiB is the documented middle used for all of
// them until a card of that kind is measured.
constexpr std::size_t kDatacenterContext = 529 * MiB;
constexpr std::size_t kConsumerContext = 450 * MiB;

}  // namespace

const std::vector<GpuProfile>& gpu_profiles() {
  // card_bytes: the total the driver reports (cudaMemGetInfo / nvidia-smi), not the marketing size.
  static const std::vector<GpuProfile> profiles = {
      {"rtx3060-12g", "NVIDIA GeForce RTX 3060, 12 GiB", 12288 * MiB, kConsumerContext},
      {"rtx4060ti-8g", "NVIDIA GeForce RTX 4060 Ti, 8 GiB", 8188 * MiB, kConsumerContext},
      {"rtx4060ti-16g", "NVIDIA GeForce RTX 4060 Ti, 16 GiB", 16380 * MiB, kConsumerContext},
      {"rtx4090", "NVIDIA GeForce RTX 4090, 24 GiB", 24564 * MiB, kConsumerContext},
      {"a100-40g", "NVIDIA A100-SXM4-40GB", 40536 * MiB, kDatacenterContext},
      {"a100-80g", "NVIDIA A100-SXM4-80GB", 81251 * MiB, kDatacenterContext},
      {"h100-80g", "NVIDIA H100 80GB HBM3", 81559 * MiB, kDatacenterContext},
      {"h200", "NVIDIA H200, 141 GB HBM3e", 143771 * MiB, kDatacenterContext},
  };
  return profiles;
}

const GpuProfile* find_gpu_profile(std::string_view name) {
  for (const GpuProfile& profile : gpu_profiles()) {
    if (profile.name == name) return &profile;
  }
  return nullptr;
}

std::string format_budget(std::size_t bytes) {
  return bytes == AllocatorConfig::kUnlimited ? std::string("unlimited") : format_size(bytes);
}

std::string Budget::describe() const {
  if (profile.empty()) return format_budget(bytes);
  return profile + " (" + format_size(bytes) + ")";
}

namespace {

[[noreturn]] void reject_budget(std::string_view text, const std::string& why) {
  std::string names;
  for (const GpuProfile& p : gpu_profiles()) names += (names.empty() ? "" : ", ") + p.name;
  throw std::invalid_argument("invalid budget " + quote_user_text(text) + ": " + why +
                              "; a budget is a size with a unit (12GiB, 512MiB, 1.5GB), a GPU "
                              "profile (" + names + ") or unlimited");
}

// "24", "1.5": digits and at most the dots parse_size will judge, no unit, no sign.
bool is_bare_number(std::string_view text) {
  bool digit = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c != '.') {
      return false;
    }
  }
  return digit;
}

// Why a bare number is refused, with the two units it most likely meant when it is short
// enough to repeat.
std::string no_unit(std::string_view number) {
  if (number.size() > 12) return "no unit (a bare number is not read as bytes)";
  std::string n(number);
  return "no unit: write " + n + "GiB or " + n + "MiB";
}

bool starts_like_a_size(std::string_view text) {
  char c = text.front();
  return (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+';
}

}  // namespace

Budget parse_budget(std::string_view text) {
  const std::string_view name = trim_blanks(text);
  if (name.empty()) reject_budget(text, "it is empty");
  if (name == "unlimited" || name == "none") return Budget{AllocatorConfig::kUnlimited, "", 0};
  if (const GpuProfile* profile = find_gpu_profile(name)) {
    return Budget{profile->budget(), profile->name, profile->context_bytes};
  }
  // "rtx9999", "nanGiB", "inf": a name, not a number.
  if (!starts_like_a_size(name)) reject_budget(text, "neither a size nor a known GPU profile");
  if (is_bare_number(name)) reject_budget(text, no_unit(name));
  std::size_t bytes = 0;
  try {
    bytes = parse_size(name);
  } catch (const InvalidSize& e) {
    reject_budget(text, e.reason());
  }
  if (bytes == 0) reject_budget(text, "a budget must be positive");
  return Budget{bytes, "", 0};
}

}  // namespace oomlab::memory
