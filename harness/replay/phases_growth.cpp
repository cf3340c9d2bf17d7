#include "harness/replay/phases_growth.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "harness/memory/alloc_rounding.hpp"
#include "harness/memory/size.hpp"
#include "harness/replay/allocation_sites.hpp"

namespace oomlab::replay {
namespace {

constexpr double kProgramStillHolds = 0.9;  // of what was live before the loop, at the trace's end

std::uint64_t size_of(const DeviceEvents& device, std::size_t alloc, const memory::RoundupTable& roundup) {
  return memory::round_request(device.events[alloc].size, roundup);
}

// The site whose live bytes grew the most between two requests.
void find_growing_site(const DeviceEvents& device, const StackTable& stacks, std::size_t from, std::size_t to,
                       const memory::RoundupTable& roundup, Growth& growth) {
  const std::size_t all = static_cast<std::size_t>(-1);
  std::map<std::string, std::int64_t> change;
  for (const SiteBytes& site : top_sites(device, stacks, to, roundup, all)) change[site.site] += site.bytes;
  for (const SiteBytes& site : top_sites(device, stacks, from, roundup, all)) change[site.site] -= site.bytes;
  for (const auto& [site, bytes] : change) {
    if (bytes > 0 && static_cast<std::uint64_t>(bytes) > growth.site_growth) {
      growth.site = site;
      growth.site_growth = static_cast<std::uint64_t>(bytes);
    }
  }
}

// The first request after the last level with live bytes back at the first level, if the
// program still holds (at the trace's end) what it had live when its loop began: released by
// the program, not by its exit.
void find_release(const DeviceEvents& device, const Phases& phases, const memory::RoundupTable& roundup,
                  Growth& growth) {
  const std::size_t n = device.events.size();
  const std::vector<bool> releases = program_releases(device);
  std::vector<bool> freed_before_loop(n, false), freed_ever(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const ReplayEvent& event = device.events[i];
    if (!releases[i]) continue;
    freed_ever[event.alloc_event] = true;
    if (i < phases.loop_start) freed_before_loop[event.alloc_event] = true;
  }
  std::uint64_t before_loop = 0, still_held = 0;
  for (std::size_t i = 0; i < phases.loop_start && i < n; ++i) {
    if (device.events[i].kind != ReplayEventKind::alloc || freed_before_loop[i]) continue;
    before_loop += size_of(device, i, roundup);
    if (!freed_ever[i]) still_held += size_of(device, i, roundup);
  }
  if (before_loop == 0 || static_cast<double>(still_held) < kProgramStillHolds * static_cast<double>(before_loop)) {
    return;  // nothing held before the loop, or the script let it all go: its teardown
  }
  std::int64_t live = 0;
  std::size_t requests = 0;
  const std::int64_t first_level = phases.low_bytes.front();
  for (std::size_t i = 0; i < n; ++i) {
    const ReplayEvent& event = device.events[i];
    if (event.kind == ReplayEventKind::alloc) {
      ++requests;
      live += static_cast<std::int64_t>(size_of(device, i, roundup));
    } else if (releases[i]) {
      live -= static_cast<std::int64_t>(size_of(device, event.alloc_event, roundup));
    } else {
      continue;
    }
    if (i > phases.level_events.back() && live <= first_level) {
      growth.released_at = i;
      growth.released_request = requests;
      return;
    }
  }
}

// Whether the growth stopped. The trace must run on for at least kPlateauIterations more of the
// growing pattern's periods after its last level; two one-period windows there, one period after
// the last level and halfway through what follows, must hold at least the first level (what grew
// is still held: not released) and the later one must not be higher than half the growth rate
// would have made it (it did not go on growing). A leak's levels go on rising while its loop
// runs; what the trace's very end does (a teardown) is not looked at.
constexpr double kPlateauIterations = 6;

std::int64_t lowest(const std::vector<std::int64_t>& live, std::size_t from, std::size_t count) {
  std::int64_t low = live[from];
  for (std::size_t i = from; i < from + count && i < live.size(); ++i) low = std::min(low, live[i]);
  return low;
}

void find_plateau(const DeviceEvents& device, const Phases& phases, const memory::RoundupTable& roundup,
                  Growth& growth) {
  const std::size_t n = device.events.size();
  const std::size_t first = phases.level_events.front(), last = phases.level_events.back();
  const std::size_t period = (last - first) / (phases.level_events.size() - 1);
  const std::size_t rest = n - 1 - last;
  if (period == 0 || static_cast<double>(rest) < kPlateauIterations * static_cast<double>(period)) return;
  const std::vector<std::int64_t> live = program_live_bytes(device, roundup);
  const std::size_t early = last + period, later = last + rest / 2 - period;
  const std::int64_t early_low = lowest(live, early, period), later_low = lowest(live, later, period);
  const std::int64_t held = phases.low_bytes.front();
  const double would_have_grown =
      0.5 * growth.bytes_per_iteration * static_cast<double>(later - early) / static_cast<double>(period);
  if (early_low < held || later_low < held) return;
  if (static_cast<double>(later_low - early_low) >= would_have_grown) return;
  std::size_t requests = 0;
  for (std::size_t i = 0; i <= last; ++i) requests += device.events[i].kind == ReplayEventKind::alloc;
  growth.stopped_at = last;
  growth.stopped_request = requests;
}

}  // namespace

Growth explain_growth(const DeviceEvents& device, const StackTable& stacks, const Phases& phases,
                      const leak::GrowthFit& fit, const memory::RoundupTable& roundup) {
  Growth growth;
  if (!fit.steady || phases.level_events.size() < 2) return growth;
  growth.steady = true;
  growth.bytes_per_iteration = fit.bytes_per_step;
  growth.iterations = phases.level_events.size() + 1;
  find_growing_site(device, stacks, phases.level_events.front(), phases.level_events.back(), roundup, growth);
  find_release(device, phases, roundup, growth);
  if (!growth.released_at) find_plateau(device, phases, roundup, growth);
  growth.leak = !growth.released_at && !growth.stopped_at;
  return growth;
}

std::string describe_growth(const Growth& growth) {
  std::string text = "live bytes grow " + format_size(static_cast<std::size_t>(growth.bytes_per_iteration)) +
                     " per iteration over " + std::to_string(growth.iterations) + " iterations";
  if (!growth.site.empty()) text += ", most at " + growth.site + " (+" + format_size(growth.site_growth) + ")";
  return text;
}

}  // namespace oomlab::replay
