#include "harness/cli/replay_dump_output.hpp"

#include <cstdio>

#include "harness/memory/size.hpp"
#include "harness/memory/user_text.hpp"

namespace oomlab::cli {

const char* const kNoHistoryAdvice =
    "no allocation history: the requests that led here cannot be replayed, diagnosed or tried under other "
    "settings (history was off, or include_traces=False / enabled='state'); record the run with "
    "torch.cuda.memory._record_memory_history(max_entries=1000000) before it, then "
    "torch.cuda.memory._dump_snapshot(path)";

namespace {

constexpr std::size_t kSitesShown = 10;

std::string percent(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "-";
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

}  // namespace

std::string dump_state_text(const std::vector<replay::DumpState>& states, const std::string& snapshot_path) {
  std::string out = "oomlab replay " + printable_text(snapshot_path) + ": the state at the dump (segments only)\n";
  for (const replay::DumpState& s : states) {
    const std::uint64_t free_in_cache = s.reserved - std::min(s.reserved, s.allocated + s.pending_free);
    out += "\ndevice " + std::to_string(s.device) + "  " + std::to_string(s.segments) + " segments" +
           (s.private_pool_segments ? " (" + std::to_string(s.private_pool_segments) + " in private pools)" : "") +
           ", " + format_size(s.reserved) + " reserved: " + format_size(s.allocated) + " allocated, " +
           (s.pending_free ? format_size(s.pending_free) + " freed but in use on another stream, " : "") +
           format_size(free_in_cache) + " free in the cache (largest free block " +
           format_size(s.largest_free_block) + ")\n";
    if (s.sites.empty()) continue;
    out += "  live at the dump, by allocation site:\n";
    for (std::size_t i = 0; i < s.sites.size() && i < kSitesShown; ++i) {
      const replay::DumpSite& site = s.sites[i];
      out += "  " + format_size(site.bytes) + "  " + percent(site.bytes, s.allocated) + "  " +
             std::to_string(site.blocks) + " blocks  " + printable_text(site.site) + "\n";
    }
    if (s.sites.size() > kSitesShown) out += "  (" + std::to_string(s.sites.size() - kSitesShown) + " more sites)\n";
  }
  out += std::string("\n") + kNoHistoryAdvice + "\n";
  return out;
}

nlohmann::ordered_json dump_state_json(const std::vector<replay::DumpState>& states, const std::string& snapshot_path) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const replay::DumpState& s : states) {
    nlohmann::ordered_json sites = nlohmann::ordered_json::array();
    for (const replay::DumpSite& site : s.sites) {
      sites.push_back({{"site", site.site}, {"bytes", site.bytes}, {"blocks", site.blocks}});
    }
    devices.push_back({{"device", s.device},
                       {"segments", s.segments},
                       {"private_pool_segments", s.private_pool_segments},
                       {"reserved", s.reserved},
                       {"allocated", s.allocated},
                       {"pending_free", s.pending_free},
                       {"largest_free_block", s.largest_free_block},
                       {"sites", sites}});
  }
  return {{"snapshot", snapshot_path}, {"replayed", false}, {"why", kNoHistoryAdvice}, {"devices", devices}};
}

}  // namespace oomlab::cli
