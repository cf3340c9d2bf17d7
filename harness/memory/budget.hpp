// Budgets: a byte cap or a GPU profile (card memory minus its CUDA context), so an OOM told on a
// 12 GiB card reproduces on any larger card, on host, and on dry.
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace oomlab::memory {

struct GpuProfile {
  std::string name;             // "rtx4090"
  std::string description;      // "NVIDIA GeForce RTX 4090, 24 GiB"
  std::size_t card_bytes;       // memory the driver reports as total
  std::size_t context_bytes;    // taken by one process's CUDA context before any allocation
  std::size_t budget() const { return card_bytes - context_bytes; }
};

const std::vector<GpuProfile>& gpu_profiles();
const GpuProfile* find_gpu_profile(std::string_view name);

// The profiles as a table, one line each (name, card memory, context, budget, card), for
// `oomlab list --profiles`.
void print_gpu_profiles(std::FILE* out);

struct Budget {
  std::size_t bytes = 0;        // cap on the allocator's reserved bytes; AllocatorConfig::kUnlimited: none
  std::string profile;          // empty when given as a size
  std::size_t context_bytes = 0;  // the profile's per-process context cost (0 for a plain size)
  std::string describe() const; // "rtx4090 (23.50GiB)", "12.00GiB" or "unlimited"
};

// "12GiB", "1.5GB", "512MiB", a profile name, or "unlimited" / "none" (no cap). A number needs a
// unit: "24" is rejected, not read as 24 bytes. Throws std::invalid_argument, one line naming
// the text (capped) and saying what a budget can be, on anything else: empty, bare number,
// negative, zero, too large, unknown unit or profile.
Budget parse_budget(std::string_view text);

// A byte cap as people read it: "unlimited" for AllocatorConfig::kUnlimited, else format_size.
std::string format_budget(std::size_t bytes);

}  // namespace oomlab::memory
