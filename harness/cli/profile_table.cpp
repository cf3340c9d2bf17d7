#include "harness/cli/profile_table.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

namespace oomlab::cli {

void print_profiles(const std::vector<RunRecord>& records, std::FILE* out) {
  const std::string prefix = "profile_ms.";
  for (const RunRecord& record : records) {
    std::vector<std::pair<std::string, double>> ranges;
    for (const auto& [name, value] : record.metrics) {
      if (name.rfind(prefix, 0) == 0) ranges.emplace_back(name.substr(prefix.size()), value);
    }
    if (ranges.empty()) continue;
    std::stable_sort(ranges.begin(), ranges.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    // The profiler forgot the warm-up steps once they had ended; the shares are of the rest.
    const std::size_t warmup = static_cast<std::size_t>(record.warmup_steps);
    const std::size_t first = record.step_seconds.size() >= warmup ? warmup : 0;
    const double step_ms =
        1e3 * std::accumulate(record.step_seconds.begin() + first, record.step_seconds.end(), 0.0);
    std::fprintf(out, "\nprofile of %s/%s on %s (%zu steps after %zu warm-up, %.1f ms of steps):\n",
                 record.scenario.c_str(), record.variant.c_str(), record.device.kind.c_str(),
                 record.step_seconds.size() - first, first, step_ms);
    for (const auto& [name, ms] : ranges) {
      std::fprintf(out, "  %-34s %10.2f ms", name.c_str(), ms);
      if (step_ms > 0) std::fprintf(out, "  %5.1f %%", 100.0 * ms / step_ms);
      std::fputc('\n', out);
    }
  }
}

}  // namespace oomlab::cli
