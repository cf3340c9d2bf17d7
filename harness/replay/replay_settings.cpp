#include "harness/replay/replay_settings.hpp"

#include <stdexcept>

#include "harness/memory/alloc_rounding.hpp"
#include "harness/memory/user_text.hpp"

namespace oomlab::replay {
SnapshotSettings snapshot_settings(const Snapshot& snapshot) {
  SnapshotSettings out;
  if (!snapshot.allocator_settings) {
    out.origin = "PyTorch's defaults (the snapshot has no allocator_settings: torch older than 2.1)";
    return out;
  }
  const AllocatorSettings& settings = *snapshot.allocator_settings;
  out.origin = "the snapshot's allocator_settings";
  memory::AllocatorConfig& config = out.config;
  if (!settings.alloc_conf.empty()) {
    try {
      config = memory::parse_alloc_conf(settings.alloc_conf, {}, "PYTORCH_CUDA_ALLOC_CONF");
      out.notes = config.notes;
      config.notes.clear();
    } catch (const std::invalid_argument& e) {
      out.notes.push_back("its PYTORCH_CUDA_ALLOC_CONF " + quote_user_text(settings.alloc_conf) +
                          " is not one oomlab reproduces; its other settings are used (" + e.what() + ")");
    }
  }
  config.max_split_size = settings.max_split_size ? static_cast<std::size_t>(*settings.max_split_size)
                                                  : memory::AllocatorConfig::kUnlimited;
  config.garbage_collection_threshold = settings.garbage_collection_threshold;
  config.expandable_segments = settings.expandable_segments;
  if (!settings.roundup_power2_divisions.empty()) {
    config.roundup_power2_divisions = {};
    for (const RoundupDivisions& interval : settings.roundup_power2_divisions) {
      const std::size_t index =
          interval.from_mib == 0 ? 0 : memory::log2_floor(static_cast<std::size_t>(interval.from_mib));
      if (index < memory::kRoundupIntervals) {
        config.roundup_power2_divisions[index] = static_cast<std::size_t>(interval.divisions);
      }
    }
  }
  return out;
}

}  // namespace oomlab::replay
