// Where memory was asked for, in the program's own words: the Python frames torch recorded with
// each request (file:line function), and the allocation sites holding the most live bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/memory/alloc_config.hpp"
#include "harness/replay/snapshot_events.hpp"
#include "harness/replay/stack_table.hpp"

namespace oomlab::replay {

// "train.py:42 forward"
std::string frame_line(const Frame& frame);

// The stack's frames, innermost first, as frame_line()s; at most `limit`. Empty without frames.
std::vector<std::string> stack_lines(const StackTable& stacks, StackId stack, std::size_t limit);

// The frame that names the site: the innermost one in the program's own code, past torch,
// Python's libraries and C++ frames; the innermost frame when all are library code.
std::string site_of(const StackTable& stacks, StackId stack);

struct SiteBytes {
  std::string site;         // site_of(), or "(no frames recorded)"
  std::uint64_t bytes = 0;  // live, rounded as the replay rounds
  std::size_t blocks = 0;
};

// The blocks live right after request `at` (DeviceEvents::events), grouped by site, most bytes
// first; at most `limit` sites.
std::vector<SiteBytes> top_sites(const DeviceEvents& device, const StackTable& stacks, std::size_t at,
                                 const memory::RoundupTable& roundup, std::size_t limit);

}  // namespace oomlab::replay
