// What a steady growth of live bytes between iterations is: a leak, or memory the program grows
// by design and gives back (a KV cache grows one token per generate step and is freed when
// generation ends). Growth released later in the trace, while the program still holds what it
// had before its loop (the model), is not a leak; growth released only when everything is (the
// script's teardown) still is one. Growth that stops, a plateau held to the end of a trace that
// runs on well past it, is not a leak either: a leak grows for as long as its loop runs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "harness/leak/growth_fit.hpp"
#include "harness/memory/alloc_config.hpp"
#include "harness/replay/phases.hpp"
#include "harness/replay/snapshot_events.hpp"
#include "harness/replay/stack_table.hpp"

namespace oomlab::replay {

struct Growth {
  bool steady = false;               // the iteration levels grow steadily (fit_iteration_growth)
  bool leak = false;                 // steady and not released while the program goes on
  double bytes_per_iteration = 0;
  std::size_t iterations = 0;        // those the levels span
  std::string site;                  // site_of() of the blocks that grew the most, first level to last
  std::uint64_t site_growth = 0;     // their growth over those iterations
  std::optional<std::size_t> released_at;  // the request after which live bytes were back at the first level
  std::size_t released_request = 0;  // that request, counted from 1 as the program made them
  // Growth that stopped: the last growing level, after which the program ran on for several
  // more iterations' worth of requests and live bytes stayed on that plateau (state made once on
  // the first steps: optimizer state allocated lazily, a CUDA graph's pool on capture).
  std::optional<std::size_t> stopped_at;
  std::size_t stopped_request = 0;  // that request, counted from 1
};

Growth explain_growth(const DeviceEvents& device, const StackTable& stacks, const Phases& phases,
                      const leak::GrowthFit& fit, const memory::RoundupTable& roundup);

// "live bytes grow 29.50MiB per iteration over 4 iterations, most at train.py:42 step (+59.00MiB)"
std::string describe_growth(const Growth& growth);

}  // namespace oomlab::replay
