// GPU profiles and budget parsing.
#include "harness/memory/budget.hpp"

#include <algorithm>
#include <stdexcept>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/user_text.hpp"

namespace oomlab::memory {
namespace {

// What one process's CUDA context takes before its first allocation (cudart, the context, lazy
// module loading on). 529 MiB is measured on an H200 (CUDA 13) as total - free after context
// creation; the other Hopper and Blackwell / Ampere datacenter parts (HBM, many SMs) are taken to
// match it. GeForce and the GDDR datacenter cards (T4, A10, L4, L40S) report 400-500 MiB in the
// same measurement elsewhere; 450 MiB is the documented middle used for all of them until a card
// of that kind is measured.
constexpr std::size_t kDatacenterContext = 529 * MiB;
constexpr std::size_t kConsumerContext = 450 * MiB;

}  // namespace

const std::vector<GpuProfile>& gpu_profiles() {
  // card_bytes: the total the driver reports in nvidia-smi's "Memory-Usage" column (MiB, drivers
  // 535-580), not the marketing size. Each description starts with the device name as the driver
  // reports it (cudaGetDeviceProperties().name), then the memory: `oomlab doctor` matches on it.
  // CUDA's own total (cudaGetDeviceProperties().totalGlobalMem, PyTorch's "total capacity" in its
  // OOM message) is 0.45-0.6 GiB lower on ECC parts: H200 150109880320 B (143155 MiB, our
  // records) against 143771; L4 22.03 GiB against 23034 MiB; T4 14.56 GiB against 15360 MiB.
  static const std::vector<GpuProfile> profiles = {
      // Turing, 7.5 (no bf16 tensor cores): nvidia-smi "Tesla T4 ... 15360MiB" (Colab, Kaggle).
      {"t4", "Tesla T4, 16 GB GDDR6", 15360 * MiB, kConsumerContext},
      // Ampere, 8.6 (8.0 for the A100s): nvidia-smi "24576MiB" (3090), "23028MiB" (A10).
      {"rtx3060-12g", "NVIDIA GeForce RTX 3060, 12 GiB", 12288 * MiB, kConsumerContext},
      {"rtx3090", "NVIDIA GeForce RTX 3090, 24 GB GDDR6X", 24576 * MiB, kConsumerContext},
      {"a10", "NVIDIA A10, 24 GB GDDR6", 23028 * MiB, kConsumerContext},
      {"a100-40g", "NVIDIA A100-SXM4-40GB", 40536 * MiB, kDatacenterContext},
      {"a100-80g", "NVIDIA A100-SXM4-80GB", 81251 * MiB, kDatacenterContext},
      // Ada, 8.9: nvidia-smi "16376MiB" (4080), "23034MiB" (L4), "46068MiB" (L40S).
      {"rtx4060ti-8g", "NVIDIA GeForce RTX 4060 Ti, 8 GiB", 8188 * MiB, kConsumerContext},
      {"rtx4060ti-16g", "NVIDIA GeForce RTX 4060 Ti, 16 GiB", 16380 * MiB, kConsumerContext},
      {"rtx4080", "NVIDIA GeForce RTX 4080, 16 GB GDDR6X", 16376 * MiB, kConsumerContext},
      {"rtx4090", "NVIDIA GeForce RTX 4090, 24 GiB", 24564 * MiB, kConsumerContext},
      {"l4", "NVIDIA L4, 24 GB GDDR6", 23034 * MiB, kConsumerContext},
      {"l40s", "NVIDIA L40S, 48 GB GDDR6", 46068 * MiB, kConsumerContext},
      // Hopper, 9.0: nvidia-smi "81559MiB" for both H100s (PCIe and SXM5 "80GB HBM3").
      {"h100-80g", "NVIDIA H100 80GB HBM3", 81559 * MiB, kDatacenterContext},
      {"h100-sxm", "NVIDIA H100 80GB HBM3, SXM5 (the h100-80g card)", 81559 * MiB, kDatacenterContext},
      {"h100-pcie", "NVIDIA H100 PCIe, 80 GB HBM2e", 81559 * MiB, kDatacenterContext},
      {"h200", "NVIDIA H200, 141 GB HBM3e", 143771 * MiB, kDatacenterContext},
      // Blackwell: 12.0 "32607MiB" (RTX 5090), 10.0 "183359MiB" (B200).
      {"rtx5090", "NVIDIA GeForce RTX 5090, 32 GB GDDR7", 32607 * MiB, kConsumerContext},
      {"b200", "NVIDIA B200, 180 GB HBM3e", 183359 * MiB, kDatacenterContext},
  };
  return profiles;
}

const GpuProfile* find_gpu_profile(std::string_view name) {
  for (const GpuProfile& profile : gpu_profiles()) {
    if (profile.name == name) return &profile;
  }
  return nullptr;
}

void print_gpu_profiles(std::FILE* out) {
  std::size_t name_width = 7;
  for (const GpuProfile& profile : gpu_profiles()) name_width = std::max(name_width, profile.name.size());
  const int width = static_cast<int>(name_width);
  std::fprintf(out, "%-*s  %10s  %10s  %10s  %s\n", width, "profile", "memory", "context", "budget", "card");
  for (const GpuProfile& profile : gpu_profiles()) {
    std::fprintf(out, "%-*s  %10s  %10s  %10s  %s\n", width, profile.name.c_str(),
                 format_size(profile.card_bytes).c_str(), format_size(profile.context_bytes).c_str(),
                 format_size(profile.budget()).c_str(), profile.description.c_str());
  }
  std::fprintf(out, "memory: the total nvidia-smi reports; budget: memory less one process's CUDA "
                    "context (--budget NAME)\n");
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
