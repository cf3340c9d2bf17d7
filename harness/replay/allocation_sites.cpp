#include "harness/replay/allocation_sites.hpp"

#include <algorithm>
#include <unordered_map>

#include "harness/memory/alloc_rounding.hpp"

namespace oomlab::replay {

std::vector<SiteBytes> top_sites(const DeviceEvents& device, const StackTable& stacks, std::size_t at,
                                 const memory::RoundupTable& roundup, std::size_t limit) {
  // The blocks live after `at`: allocated up to it and not freed up to it.
  std::vector<bool> freed(device.events.size(), false);
  const std::size_t end = std::min(at + 1, device.events.size());
  for (std::size_t i = 0; i < end; ++i) {
    const ReplayEvent& event = device.events[i];
    if (event.kind == ReplayEventKind::free && event.alloc_event != kNoEvent) freed[event.alloc_event] = true;
  }
  std::unordered_map<StackId, SiteBytes> by_stack;
  for (std::size_t i = 0; i < end; ++i) {
    const ReplayEvent& event = device.events[i];
    if (event.kind != ReplayEventKind::alloc || freed[i]) continue;
    SiteBytes& site = by_stack[event.frames];
    site.bytes += memory::round_request(event.size, roundup);
    ++site.blocks;
  }
  // Stacks that share a site (the same line called from different places) add up.
  std::unordered_map<std::string, SiteBytes> by_site;
  for (auto& [stack, bytes] : by_stack) {
    const std::string name = site_of(stacks, stack);
    SiteBytes& site = by_site[name];
    site.site = name;
    site.bytes += bytes.bytes;
    site.blocks += bytes.blocks;
  }
  std::vector<SiteBytes> sites;
  for (auto& [name, site] : by_site) sites.push_back(std::move(site));
  std::sort(sites.begin(), sites.end(), [](const SiteBytes& a, const SiteBytes& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.site < b.site;
  });
  if (sites.size() > limit) sites.resize(limit);
  return sites;
}

}  // namespace oomlab::replay
