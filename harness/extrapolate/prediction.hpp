// The extrapolated trace replayed as `oomlab replay` replays a snapshot: the reference
// snapshot's allocator settings (then --alloc-conf), the budget (--budget: a size or a card
// profile; unlimited without one), the same allocator model, the OOM diagnosed over the run's
// need, the sites at the peak, and the what-ifs. And `bisect`: the largest knob value that fits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/extrapolate/extrapolation.hpp"
#include "harness/memory/alloc_config.hpp"
#include "harness/replay/allocation_sites.hpp"
#include "harness/replay/phases.hpp"
#include "harness/replay/replay.hpp"
#include "harness/replay/replay_report.hpp"
#include "harness/replay/what_if.hpp"

namespace oomlab::extrapolate {

struct PredictionSettings {
  std::string budget;      // parse_budget's syntax; empty: unlimited
  std::string alloc_conf;  // over the reference snapshot's settings
  bool what_if = false;
};

// The allocator as the replay runs it. Throws std::invalid_argument (a bad --budget or
// --alloc-conf).
struct ReplaySetup {
  memory::AllocatorConfig config;
  std::string budget_text;  // "rtx3060-12g (11.50GiB) (--budget)", "unlimited (no --budget)"
  std::string origin;       // of the settings: "the snapshot's allocator_settings", "PyTorch's defaults (...)"
  std::vector<std::string> notes;
};
ReplaySetup replay_setup(const Extrapolation& model, const PredictionSettings& settings);

struct Prediction {
  std::int64_t at = 0;
  ReplaySetup setup;
  replay::DeviceEvents events;        // the synthesised trace
  replay::ReplayResult result;        // under the budget
  std::uint64_t need_allocated = 0;   // with no cap
  std::uint64_t need_reserved = 0;
  // Left-out requests (Extrapolation::unaligned_bound): the peaks are exact without them and at
  // most this much higher with them (reserved: rounded up to whole 2 MiB segments).
  std::uint64_t bound_bytes = 0;
  std::optional<replay::OomFinding> oom;
  replay::Phases phases;
  std::vector<replay::SiteBytes> top_sites;
  std::vector<replay::WhatIfRow> what_if;

  bool exact() const { return bound_bytes == 0; }
  // The need's bounds (the peaks themselves when nothing failed).
  std::uint64_t allocated_bound() const { return need_allocated + bound_bytes; }
  std::uint64_t reserved_bound() const;
};

// Throws what synthesise() and replay_setup() throw.
Prediction predict(const Extrapolation& model, std::int64_t at, const PredictionSettings& settings);

struct BisectAnswer {
  std::optional<std::int64_t> largest;  // nullopt: not even 1 fits
  bool unbounded = false;               // fits up to kLargestKnobValue (or until sizes pass any GPU)
  // With left-out requests: the largest value whose peak plus their bound still fits.
  std::optional<std::int64_t> largest_within_bound;
  std::size_t replays = 0;             // full replays of the synthesised trace
};

// The largest knob value whose replay fits the budget, assuming a larger value never needs less
// memory: the live bytes (no allocator) bound it from above, then full replays of the
// synthesised trace search down from there.
BisectAnswer bisect(const Extrapolation& model, const PredictionSettings& settings);

}  // namespace oomlab::extrapolate
