#include "harness/replay/phases.hpp"

#include <algorithm>
#include <stdexcept>

#include "harness/memory/alloc_rounding.hpp"

namespace oomlab::replay {
namespace {

struct LiveBytes {
  std::size_t event = 0;  // the request after which
  std::int64_t bytes = 0;
};

// Live bytes after every alloc and free, with the replay's rounding.
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

}  // namespace

std::string Phases::describe() const {
  const std::string count = std::to_string(boundaries.size());
  if (from_snapshot_marks) return count + " _snapshot() marks";
  return count + " iteration end" + (boundaries.size() == 1 ? "" : "s") + " (live bytes back to a low)";
}

Phases find_phases(const DeviceEvents& device, const memory::RoundupTable& roundup) {
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
      if (!phases.from_snapshot_marks) phases.boundaries.push_back(low.event);
      falling = false;
      high = point.bytes;
    }
  }
  return phases;
}

leak::GrowthFit fit_iteration_growth(const Phases& phases) {
  std::vector<std::int64_t> steps(phases.low_bytes.size());
  for (std::size_t i = 0; i < steps.size(); ++i) steps[i] = static_cast<std::int64_t>(i);
  try {
    return leak::fit_growth(steps, phases.low_bytes);
  } catch (const std::invalid_argument&) {
    return {};
  }
}

}  // namespace oomlab::replay
