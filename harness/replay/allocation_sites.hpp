// Where memory was asked for, in the program's own words: the allocation sites (site_of(), the
// user's own line) holding the most live bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/memory/alloc_config.hpp"
#include "harness/replay/allocation_sites_frames.hpp"
#include "harness/replay/snapshot_events.hpp"
#include "harness/replay/stack_table.hpp"

namespace oomlab::replay {

struct SiteBytes {
  std::string site;         // site_of()
  std::uint64_t bytes = 0;  // live, rounded as the replay rounds
  std::size_t blocks = 0;
};

// The blocks live right after request `at` (DeviceEvents::events), grouped by site, most bytes
// first; at most `limit` sites.
std::vector<SiteBytes> top_sites(const DeviceEvents& device, const StackTable& stacks, std::size_t at,
                                 const memory::RoundupTable& roundup, std::size_t limit);

}  // namespace oomlab::replay
