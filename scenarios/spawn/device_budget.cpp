#include "scenarios/spawn/device_budget.hpp"

#include <numeric>
#include <string>

#include "harness/memory/size.hpp"

namespace oomlab::scenarios {

std::size_t ExternalHolders::total() const {
  return std::accumulate(bytes.begin(), bytes.end(), std::size_t{0});
}

void require_device_room(const memory::CachingAllocator& allocator, std::size_t request,
                         memory::Tag tag, const ExternalHolders& external) {
  const std::size_t budget = allocator.config().budget;
  if (budget == memory::AllocatorConfig::kUnlimited) return;
  const memory::MemoryStats stats = allocator.stats();
  const auto allocated = static_cast<std::size_t>(stats.allocated.current);
  const std::size_t rounded = (request + 511) / 512 * 512;
  const std::size_t external_bytes = external.total();
  if (allocated + rounded + external_bytes <= budget) return;

  memory::OomInfo info;
  info.requested = rounded;
  info.budget = budget;
  info.allocated = allocated;
  info.reserved = static_cast<std::size_t>(stats.reserved.current);
  info.largest_free_block = stats.largest_free_block;
  info.external = external_bytes;
  info.tag = tag;
  info.largest_tag = stats.largest_tag_current();
  for (int t = 0; t < memory::kTagCount; ++t) {
    info.tag_allocated[t] = static_cast<std::size_t>(stats.tag_allocated[t].current);
  }
  memory::diagnose(info);
  if (info.diagnosis == memory::Diagnosis::external && !external.pids.empty()) {
    std::string holders;
    for (std::size_t i = 0; i < external.pids.size(); ++i) {
      holders += (i ? ", " : "") + std::string("pid ") + std::to_string(external.pids[i]) + " (" +
                 format_size(external.bytes[i]) + ")";
    }
    info.remedy = std::to_string(external.pids.size()) +
                  " worker processes hold a CUDA context each: " + holders +
                  "; their start-up touched CUDA before the worker check. Run the worker check "
                  "first in main() and keep workers CPU-only. In general: " + info.remedy;
  }
  throw memory::OomError(info);
}

}  // namespace oomlab::scenarios
