// What a snapshot without allocation history still tells. torch.cuda.memory._snapshot() with
// history off (or include_traces=False, enabled="state") holds only the segments and their
// blocks at the dump: nothing can be replayed, but what the cache held then, how much of it was
// free in pieces, and which lines held the live bytes can be read straight off it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/replay/snapshot.hpp"

namespace oomlab::replay {

struct DumpSite {
  std::string site;  // the user's line (allocation_sites_frames.hpp), or what the stack is
  std::uint64_t bytes = 0;
  std::size_t blocks = 0;
};

// One device's segments at the dump.
struct DumpState {
  int device = 0;
  std::size_t segments = 0;
  std::size_t private_pool_segments = 0;  // CUDA graph / MemPool segments among them
  std::uint64_t reserved = 0;             // every segment's bytes
  std::uint64_t allocated = 0;            // blocks held by tensors (active_allocated)
  std::uint64_t pending_free = 0;         // freed, still in use on another stream
  std::uint64_t largest_free_block = 0;   // the largest inactive block
  std::vector<DumpSite> sites;            // live bytes by site, largest first
};

// Whether any trace entry asks for memory (an alloc or an oom): what a replay needs.
bool has_allocation_history(const Snapshot& snapshot);

// Per device with segments, in device order.
std::vector<DumpState> dump_state(const Snapshot& snapshot);

}  // namespace oomlab::replay
