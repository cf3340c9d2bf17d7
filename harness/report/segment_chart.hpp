// The segment view at the peak: the allocator's reserved memory at its most reserved moment,
// segment after segment in one strip per variant (on one scale), each block coloured by its tag
// and the free-but-reserved space grey: what fragmentation looks like.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "harness/memory/trace_state.hpp"
#include "harness/report/trace_reader.hpp"

namespace oomlab::report {

// The moment the segment view shows: just before the first OOM when the run had one (what the
// allocator held when it found no room), else the peak of reserved memory (among equal peaks,
// the moment with the most bytes in blocks). `moment` says which, for the panel's title.
memory::TraceState state_at_peak(const RecordedTrace& trace, std::string& moment);

struct SegmentPanel {
  std::string title;  // "broken"
  memory::TraceState state;
};

std::string segment_svg(const std::string& title, const std::vector<SegmentPanel>& panels);

// "11.06 GiB reserved in 37 segments: 9.49 GiB in blocks, 1.57 GiB free (largest free piece 800 MiB)".
std::string describe_segments(const memory::TraceState& state);

}  // namespace oomlab::report
