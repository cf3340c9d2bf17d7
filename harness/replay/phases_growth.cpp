#include "harness/replay/phases_growth.hpp"

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
  std::vector<bool> freed_before_loop(n, false), freed_ever(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const ReplayEvent& event = device.events[i];
    if (event.kind != ReplayEventKind::free || event.alloc_event == kNoEvent) continue;
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
    } else if (event.kind == ReplayEventKind::free && event.alloc_event != kNoEvent) {
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
  growth.leak = !growth.released_at.has_value();
  return growth;
}

std::string describe_growth(const Growth& growth) {
  std::string text = "live bytes grow " + format_size(static_cast<std::size_t>(growth.bytes_per_iteration)) +
                     " per iteration over " + std::to_string(growth.iterations) + " iterations";
  if (!growth.site.empty()) text += ", most at " + growth.site + " (+" + format_size(growth.site_growth) + ")";
  return text;
}

}  // namespace oomlab::replay
