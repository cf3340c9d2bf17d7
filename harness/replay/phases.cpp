#include "harness/replay/phases.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <stdexcept>

#include "harness/memory/alloc_rounding.hpp"

namespace oomlab::replay {
namespace {

struct LiveBytes {
  std::size_t event = 0;  // the request after which
  std::int64_t bytes = 0;
};

// Live bytes in the cache's sense after every alloc and free (a block counts until it is back in
// the cache, free_completed), with the replay's rounding: where an empty_cache() would go.
std::vector<LiveBytes> live_bytes(const DeviceEvents& device, const memory::RoundupTable& roundup) {
  std::vector<LiveBytes> series;
  series.reserve(device.allocs + device.frees);
  std::int64_t live = 0;
  for (std::size_t i = 0; i < device.events.size(); ++i) {
    const ReplayEvent& event = device.events[i];
    if (event.kind == ReplayEventKind::alloc) {
      live += static_cast<std::int64_t>(memory::round_request(event.size, roundup));
    } else if (event.kind == ReplayEventKind::free && event.alloc_event != kNoEvent) {
      live -= static_cast<std::int64_t>(memory::round_request(device.events[event.alloc_event].size, roundup));
    } else {
      continue;
    }
    series.push_back({i, live});
  }
  return series;
}

// The typical fall of live bytes in one go (a backward pass freeing its activations): the
// median of the falls from a local high to the next local low that are at least 1% of the
// trace's range. A median, so a teardown at the end or one big evaluation batch does not set it.
std::int64_t typical_fall(const std::vector<LiveBytes>& series) {
  if (series.size() < 2) return 0;
  std::int64_t lowest = series[0].bytes, highest = series[0].bytes;
  std::vector<std::int64_t> falls;
  std::int64_t high = 0, low = 0;
  bool falling = false;
  for (std::size_t i = 1; i < series.size(); ++i) {
    const std::int64_t previous = series[i - 1].bytes, bytes = series[i].bytes;
    lowest = std::min(lowest, bytes);
    highest = std::max(highest, bytes);
    if (bytes < previous) {
      if (!falling) high = previous;
      falling = true;
      low = bytes;
    } else if (bytes > previous && falling) {
      falls.push_back(high - low);
      falling = false;
    }
  }
  if (falling) falls.push_back(high - low);
  const std::int64_t floor = (highest - lowest) / 100;
  falls.erase(std::remove_if(falls.begin(), falls.end(), [&](std::int64_t fall) { return fall < floor || fall <= 0; }),
              falls.end());
  if (falls.empty()) return 0;
  std::nth_element(falls.begin(), falls.begin() + static_cast<std::ptrdiff_t>(falls.size() / 2), falls.end());
  return falls[falls.size() / 2];
}

// What identifies a request across iterations: its size and where it was made.
struct RequestKey {
  std::uint64_t size;
  StackId frames;
  bool operator==(const RequestKey& other) const { return size == other.size && frames == other.frames; }
};
struct RequestKeyHash {
  std::size_t operator()(const RequestKey& key) const {
    return std::hash<std::uint64_t>()(key.size * 0x9E3779B97F4A7C15ull ^ key.frames);
  }
};

using KeyCounts = std::unordered_map<RequestKey, std::size_t, RequestKeyHash>;

constexpr std::size_t kMinRecurringKeys = 3;  // distinct requests that must share the loop
constexpr std::size_t kMarkersPerCount = 8;   // first requests tried as a loop's opening, per count
constexpr std::size_t kMarkerTries = 48;      // in all: a pass over the trace each

// The event indices at which request `marker` occurs, when it opens `count` iterations of one
// loop: of the requests made `count` times, at least kMinRecurringKeys and half are made once
// between each two of its occurrences (the others, e.g. one tensor per layer made as a model is
// built, are not in the loop). Empty otherwise.
std::vector<std::size_t> loop_starts(const DeviceEvents& device, const RequestKey& marker, std::size_t count,
                                     const KeyCounts& counts) {
  std::vector<std::size_t> starts;
  KeyCounts seen;                   // occurrences so far
  std::unordered_map<RequestKey, bool, RequestKeyHash> in_loop;  // every occurrence in its iteration
  for (std::size_t i = 0; i < device.events.size(); ++i) {
    const ReplayEvent& event = device.events[i];
    if (event.kind != ReplayEventKind::alloc) continue;
    const RequestKey key{event.size, event.frames};
    if (key == marker) starts.push_back(i);
    if (counts.at(key) != count) continue;
    const std::size_t occurrence = seen[key]++;
    const bool placed = starts.size() == occurrence + 1;  // the k-th after the marker's k-th
    auto [entry, added] = in_loop.emplace(key, placed);
    if (!added) entry->second = entry->second && placed;
  }
  std::size_t placed_keys = 0;
  for (const auto& [key, placed] : in_loop) placed_keys += placed;
  if (placed_keys < kMinRecurringKeys || placed_keys * 2 < in_loop.size()) return {};
  return starts;
}

// The starts of the outermost loop: of the counts that make a loop (loop_starts), the smallest
// (a training loop of 2 steps over 12 layers repeats its layers' requests 24 times), opened by
// its earliest request.
std::vector<std::size_t> iteration_starts(const DeviceEvents& device) {
  KeyCounts counts;
  for (const ReplayEvent& event : device.events) {
    if (event.kind == ReplayEventKind::alloc) ++counts[{event.size, event.frames}];
  }
  std::map<std::size_t, std::vector<RequestKey>> markers;  // ascending counts, in trace order
  KeyCounts keys_with_count;
  for (const ReplayEvent& event : device.events) {
    if (event.kind != ReplayEventKind::alloc) continue;
    const RequestKey key{event.size, event.frames};
    const std::size_t count = counts.at(key);
    if (count < 2) continue;
    std::vector<RequestKey>& candidates = markers[count];
    if (candidates.size() < kMarkersPerCount &&
        std::find(candidates.begin(), candidates.end(), key) == candidates.end()) {
      candidates.push_back(key);
    }
  }
  std::size_t tries = 0;
  for (const auto& [count, candidates] : markers) {
    for (const RequestKey& marker : candidates) {
      if (++tries > kMarkerTries) return {};
      std::vector<std::size_t> starts = loop_starts(device, marker, count, counts);
      if (!starts.empty()) return starts;
    }
  }
  return {};
}

}  // namespace

std::vector<bool> program_releases(const DeviceEvents& device) {
  const std::size_t n = device.events.size();
  std::vector<bool> releases(n, false), requested(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const ReplayEvent& event = device.events[i];
    if (event.alloc_event == kNoEvent || event.alloc_event >= n) continue;
    if (event.kind == ReplayEventKind::free_requested && !requested[event.alloc_event]) {
      requested[event.alloc_event] = true;
      releases[i] = true;
    } else if (event.kind == ReplayEventKind::free && !requested[event.alloc_event]) {
      releases[i] = true;
    }
  }
  return releases;
}

std::string Phases::describe() const {
  const std::string count = std::to_string(boundaries.size());
  if (from_snapshot_marks) return count + " _snapshot() marks";
  if (boundaries.empty()) return "no iterations found (no repeating requests, no lows of live bytes)";
  if (from_repetition) {
    return std::to_string(boundaries.size() + 1) + " iterations (a repeating pattern of requests)";
  }
  return count + " iteration end" + (boundaries.size() == 1 ? "" : "s") + " (live bytes back to a low)";
}

std::string Phases::where() const {
  if (from_snapshot_marks) return "each _snapshot() mark";
  return from_repetition ? "each iteration's start" : "each low of live bytes";
}

namespace {

// The phases by the cache's live bytes: boundaries where the blocks are back in the cache.
Phases find_cache_phases(const DeviceEvents& device, const memory::RoundupTable& roundup) {
  Phases phases;
  // A _snapshot() mark ends the phase at the request before it.
  std::size_t last_request = kNoEvent;
  for (std::size_t i = 0; i < device.events.size(); ++i) {
    const ReplayEventKind kind = device.events[i].kind;
    if (kind == ReplayEventKind::snapshot && last_request != kNoEvent) phases.boundaries.push_back(last_request);
    if (kind == ReplayEventKind::alloc || kind == ReplayEventKind::free) last_request = i;
  }
  phases.boundaries.erase(std::unique(phases.boundaries.begin(), phases.boundaries.end()), phases.boundaries.end());
  phases.from_snapshot_marks = !phases.boundaries.empty();

  const std::vector<LiveBytes> series = live_bytes(device, roundup);
  const std::vector<std::size_t> starts = iteration_starts(device);
  if (!starts.empty() && !series.empty()) {
    phases.from_repetition = true;
    phases.loop_start = starts.front();
    std::size_t point = 0;  // series[point - 1] is the last request before starts[k]
    for (std::size_t k = 1; k < starts.size(); ++k) {
      while (point < series.size() && series[point].event < starts[k]) ++point;
      if (point == 0) continue;
      if (!phases.from_snapshot_marks) phases.boundaries.push_back(series[point - 1].event);
      phases.low_bytes.push_back(series[point - 1].bytes);
      phases.level_events.push_back(series[point - 1].event);
    }
    return phases;
  }
  const std::int64_t step = typical_fall(series) / 2;
  if (step <= 0) return phases;
  std::int64_t high = 0;
  LiveBytes low{};
  bool falling = false;
  for (const LiveBytes& point : series) {
    if (!falling) {
      high = std::max(high, point.bytes);
      if (point.bytes <= high - step) {
        falling = true;
        low = point;
      }
    } else if (point.bytes < low.bytes) {
      low = point;
    } else if (point.bytes >= low.bytes + step) {
      phases.low_bytes.push_back(low.bytes);
      phases.level_events.push_back(low.event);
      if (!phases.from_snapshot_marks) phases.boundaries.push_back(low.event);
      falling = false;
      high = point.bytes;
    }
  }
  return phases;
}

}  // namespace

std::vector<std::int64_t> program_live_bytes(const DeviceEvents& device, const memory::RoundupTable& roundup) {
  std::vector<std::int64_t> live(device.events.size());
  const std::vector<bool> releases = program_releases(device);
  std::int64_t now = 0;
  for (std::size_t i = 0; i < device.events.size(); ++i) {
    const ReplayEvent& event = device.events[i];
    if (event.kind == ReplayEventKind::alloc) {
      now += static_cast<std::int64_t>(memory::round_request(event.size, roundup));
    } else if (releases[i]) {
      now -= static_cast<std::int64_t>(memory::round_request(device.events[event.alloc_event].size, roundup));
    }
    live[i] = now;
  }
  return live;
}

Phases find_phases(const DeviceEvents& device, const memory::RoundupTable& roundup) {
  Phases phases = find_cache_phases(device, roundup);
  // The levels a leak is judged on are what the program holds: a block it dropped but another
  // stream still uses (record_stream) is not kept by the program.
  if (!phases.level_events.empty()) {
    const std::vector<std::int64_t> live = program_live_bytes(device, roundup);
    for (std::size_t k = 0; k < phases.level_events.size(); ++k) phases.low_bytes[k] = live[phases.level_events[k]];
  }
  return phases;
}

leak::GrowthFit fit_iteration_growth(const Phases& phases) {
  std::vector<std::int64_t> steps(phases.low_bytes.size());
  for (std::size_t i = 0; i < steps.size(); ++i) steps[i] = static_cast<std::int64_t>(i);
  // A repeating loop's levels are exact (the same point of each iteration), and a snapshot holds
  // few iterations: every level counts, three suffice and one window decides; the significance
  // and jump tests still tell a leak from a plateau. Lows of live bytes are noisier: the
  // detector's own criteria.
  leak::GrowthCriteria criteria;
  if (phases.from_repetition) {
    criteria.window = 64;
    criteria.floor_span = 1;
    criteria.min_floor_points = 3;
    criteria.confirm_samples = 1;
  }
  try {
    return leak::fit_growth(steps, phases.low_bytes, criteria);
  } catch (const std::invalid_argument&) {
    return {};
  }
}

}  // namespace oomlab::replay
