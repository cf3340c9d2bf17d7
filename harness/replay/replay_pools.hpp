// Which pool each of PyTorch's requests was served from. A snapshot names the pool of the
// segments alive at its end (segment_pool_id: (0, 0) the default pool, others a CUDA graph's
// or a torch.cuda.MemPool's private pool); its trace entries do not. So every traced segment
// (segment_alloc, segment_map) and every block is tied to the segment PyTorch put it in, by
// address; a segment still there at the end takes the snapshot's pool, and one released before
// (a pool's segments go when the pool does) is resolved during the replay (see resolve below).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "harness/replay/snapshot.hpp"
#include "harness/replay/snapshot_events.hpp"

namespace oomlab::replay {

constexpr std::uint32_t kNoSegment = static_cast<std::uint32_t>(-1);

struct TracedSegment {
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::optional<PoolId> pool;  // the snapshot's segment_pool_id; nullopt: released before the end
};

struct TracedSegments {
  std::vector<TracedSegment> segments;
  // By event: the segment an alloc's block, or a segment decision, lies in (kNoSegment: none).
  std::vector<std::uint32_t> segment_of;
  bool has_private_pools = false;  // some segment is known to be in a private pool
};

TracedSegments trace_segments(const DeviceEvents& device, const Snapshot& snapshot);

}  // namespace oomlab::replay
