// The allocator settings a snapshot's run had: its allocator_settings (PyTorch's defaults when
// an older torch wrote none), which a replay starts from before --alloc-conf.
#pragma once
#include <string>
#include <vector>

#include "harness/memory/alloc_config.hpp"
#include "harness/replay/snapshot.hpp"

namespace oomlab::replay {

struct SnapshotSettings {
  memory::AllocatorConfig config;
  std::string origin;               // "the snapshot's allocator_settings" or "PyTorch's defaults (...)"
  std::vector<std::string> notes;   // what could not be carried over, one line each
};

// The structured fields (max_split_size, garbage_collection_threshold, expandable_segments,
// roundup_power2_divisions) are authoritative: they are the state when the snapshot was taken.
// max_non_split_rounding_mb is recorded nowhere but in the PYTORCH_CUDA_ALLOC_CONF text, so it
// is read from there.
SnapshotSettings snapshot_settings(const Snapshot& snapshot);

}  // namespace oomlab::replay
