#include "harness/replay/allocation_sites.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "harness/memory/alloc_rounding.hpp"

namespace oomlab::replay {
namespace {

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// torch's own files, installed packages, the standard library, and C++ frames ("??" or a .so).
bool library_frame(const Frame& frame) {
  const std::string_view file = frame.filename;
  return file.empty() || file == "??" || contains(file, "/torch/") || contains(file, "site-packages/") ||
         contains(file, "dist-packages/") || contains(file, "/lib/python") || file.front() == '<' ||
         contains(file, ".so");
}

}  // namespace

std::string frame_line(const Frame& frame) {
  return frame.filename + ":" + std::to_string(frame.line) + " " + frame.name;
}

std::vector<std::string> stack_lines(const StackTable& stacks, StackId stack, std::size_t limit) {
  std::vector<std::string> lines;
  for (FrameId id : stacks.stack(stack)) {
    if (lines.size() == limit) break;
    lines.push_back(frame_line(stacks.frame(id)));
  }
  return lines;
}

std::string site_of(const StackTable& stacks, StackId stack) {
  const std::vector<FrameId>& frames = stacks.stack(stack);
  if (frames.empty()) return "(no frames recorded)";
  for (FrameId id : frames) {
    if (!library_frame(stacks.frame(id))) return frame_line(stacks.frame(id));
  }
  return frame_line(stacks.frame(frames.front()));
}

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
