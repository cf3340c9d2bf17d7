// How much memory there is and what one process's context costs.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "harness/doctor/checks.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::doctor {
namespace {

constexpr const char* kNoGpu = "no GPU to measure";

}  // namespace

std::optional<std::size_t> held_by_others(const GpuFacts& gpu) {
  if (!gpu.context_bytes) return std::nullopt;
  const std::size_t used = gpu.total_bytes - std::min(gpu.free_bytes, gpu.total_bytes);
  return used > *gpu.context_bytes ? used - *gpu.context_bytes : 0;
}

const memory::GpuProfile* profile_for_device(const GpuFacts& gpu) {
  const memory::GpuProfile* best = nullptr;
  std::size_t best_distance = gpu.total_bytes / 10 + 1;
  for (const memory::GpuProfile& profile : memory::gpu_profiles()) {
    // Descriptions are "<device name>, <memory>" or the device name alone.
    if (profile.description.substr(0, profile.description.find(',')) != gpu.name) continue;
    std::size_t distance = profile.card_bytes > gpu.total_bytes ? profile.card_bytes - gpu.total_bytes
                                                                 : gpu.total_bytes - profile.card_bytes;
    if (distance < best_distance) {
      best = &profile;
      best_distance = distance;
    }
  }
  return best;
}

Check check_memory(const MachineFacts& facts) {
  const GpuFacts& gpu = facts.gpu;
  if (!gpu.available) return {"memory", Verdict::skip, kNoGpu};
  std::string detail = format_size(gpu.total_bytes) + " total, " + format_size(gpu.free_bytes) +
                       " free with this process's context";
  if (auto others = held_by_others(gpu)) detail += ", " + format_size(*others) + " held by others";
  const memory::GpuProfile* profile = profile_for_device(gpu);
  if (profile && gpu.free_bytes < profile->budget()) {
    return {"memory", Verdict::warn,
            detail + "; less than the " + profile->name + " budget (" + format_size(profile->budget()) +
                "): what fits that budget elsewhere may not fit here (see processes)"};
  }
  if (profile) detail += "; fits the " + profile->name + " budget (" + format_size(profile->budget()) + ")";
  return {"memory", Verdict::ok, detail};
}

Check check_context(const MachineFacts& facts) {
  const GpuFacts& gpu = facts.gpu;
  if (!gpu.available) return {"context", Verdict::skip, kNoGpu};
  if (!gpu.context_bytes) return {"context", Verdict::skip, "not measured: " + gpu.context_error};
  const std::size_t measured = *gpu.context_bytes;
  const std::string head = format_size(measured) + " per process (measured in a second process)";
  const memory::GpuProfile* profile = profile_for_device(gpu);
  if (!profile) {
    return {"context", Verdict::ok,
            head + "; oomlab has no profile for this card: its budget would be " +
                format_size(gpu.total_bytes > measured ? gpu.total_bytes - measured : 0)};
  }
  const std::int64_t difference =
      static_cast<std::int64_t>(measured) - static_cast<std::int64_t>(profile->context_bytes);
  const std::size_t tolerance = std::max<std::size_t>(64 * MiB, profile->context_bytes / 8);
  const std::string assumed = "; profile " + profile->name + " assumes " + format_size(profile->context_bytes);
  if (static_cast<std::size_t>(std::llabs(difference)) <= tolerance) return {"context", Verdict::ok, head + assumed};
  return {"context", Verdict::warn,
          head + assumed + ": a run here has " + format_size(static_cast<std::size_t>(std::llabs(difference))) +
              (difference > 0 ? " less" : " more") + " than that profile's budget"};
}

}  // namespace oomlab::doctor
