// The trace as files people open: a Chrome-trace / Perfetto JSON of an allocator's events, and
// the OOM dump (PyTorch users' "dump the memory state on OOM"): the last events plus every
// segment and block at the failure, itself a Chrome trace so ui.perfetto.dev opens it.
#pragma once
#include <cstddef>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "harness/memory/trace.hpp"

namespace oomlab::memory {

class CachingAllocator;

// The allocator's trace on the time axis that means something for its source: wall clock where
// memory is real, logical time (one microsecond per event) on dry.
TimeAxis natural_time_axis(CachingAllocator& allocator);
nlohmann::json chrome_trace(CachingAllocator& allocator);

// How many of the last events an OOM dump keeps: enough for the last steps of a typical run,
// small enough that a suite of OOMing variants does not write gigabytes.
constexpr std::size_t kOomDumpEvents = 8192;

// A Chrome trace of the last `last_events` events whose otherData.oom holds `message`, the
// allocator's memory_summary() and every segment with its blocks at this moment (segments_json).
nlohmann::json oom_dump(CachingAllocator& allocator, const std::string& message,
                        std::size_t last_events = kOomDumpEvents);

// Segments and their blocks, sorted by segment and offset, with the free bytes between blocks:
// [{"segment": 3, "mapped": 20971520, "stream": 0, "allocated": ..., "free": ..., "largest_free": ...,
//   "blocks": [{"offset": 0, "bytes": 1048576, "tag": "activations", "site": "...", "sequence": 17}]}]
nlohmann::json segments_json(const TraceState& state, const Trace& trace);

// The trace's event counts as record metrics, "events.alloc", "events.segment_map", ... (every
// event counted, dropped ones too): deterministic on dry, so the regression baselines hold them.
void add_event_counts(const Trace& trace, std::map<std::string, double>& metrics);

// Chrome trace of the events from index `first` of trace.events() on (Trace::to_chrome_json: all).
nlohmann::json chrome_json_from(const Trace& trace, TimeAxis axis, std::size_t first);

}  // namespace oomlab::memory
