#include "harness/replay/what_if.hpp"

#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/replay/replay.hpp"

namespace oomlab::replay {
namespace {

struct RowRunner {
  const DeviceEvents& device;
  const ReplayPlan& plan;
  std::optional<std::size_t> largest_cap;
  std::size_t measure_from = 0;

  WhatIfRow operator()(std::string setting, const memory::AllocatorConfig& config,
                       const std::vector<std::size_t>& empty_cache_after = {}) const {
    WhatIfRow row = run_row(device, plan, std::move(setting), config, empty_cache_after, measure_from);
    if (largest_cap && config.budget != *largest_cap && !row.fits) {
      memory::AllocatorConfig larger = config;
      larger.budget = *largest_cap;
      row.fits_at_largest_cap = run_row(device, plan, "", larger, empty_cache_after, measure_from).fits;
    } else if (largest_cap) {
      row.fits_at_largest_cap = row.fits;  // fitting the tightest cap, it fits every larger one
    }
    return row;
  }

  static WhatIfRow run_row(const DeviceEvents& device, const ReplayPlan& plan, std::string setting,
                           const memory::AllocatorConfig& config, const std::vector<std::size_t>& empty_cache_after,
                           std::size_t measure_from);
};

WhatIfRow RowRunner::run_row(const DeviceEvents& device, const ReplayPlan& plan, std::string setting,
                             const memory::AllocatorConfig& config, const std::vector<std::size_t>& empty_cache_after,
                             std::size_t measure_from) {
  ReplayOptions options;
  options.measure_from = measure_from;
  options.config = config;
  options.empty_cache_after = empty_cache_after;
  const ReplayResult result = replay(device, plan, options);
  WhatIfRow row;
  row.setting = std::move(setting);
  row.alloc_conf = config.to_string();
  row.budget = config.budget;
  row.peak_reserved = result.peak_reserved;
  row.peak_allocated = result.peak_allocated;
  row.fits = result.fits();
  row.failed_requests = result.ooms.size();
  row.fragmentation_at_peak = result.fragmentation_at_peak;
  return row;
}

}  // namespace

// Cards within a rounding of each other (rtx4060ti-16g and rtx4080 differ by 10 MiB) are one
// size: the next card down is at least this much smaller.
constexpr double kNextCardAtMost = 0.95;

const memory::GpuProfile* next_smaller_profile(std::size_t budget) {
  const memory::GpuProfile* best = nullptr;
  for (const memory::GpuProfile& profile : memory::gpu_profiles()) {
    if (static_cast<double>(profile.budget()) > kNextCardAtMost * static_cast<double>(budget)) continue;
    if (best == nullptr || profile.budget() > best->budget()) best = &profile;
  }
  return best;
}

std::vector<WhatIfRow> what_if(const DeviceEvents& device, const ReplayPlan& plan,
                               const memory::AllocatorConfig& recorded, const Phases& phases,
                               std::optional<std::size_t> largest_cap, std::size_t measure_from) {
  const RowRunner row_for{device, plan, largest_cap, measure_from};
  std::vector<WhatIfRow> rows;
  rows.push_back(row_for("as recorded", recorded));
  rows.back().as_recorded = true;
  const std::uint64_t recorded_peak = rows.back().peak_reserved;
  if (!recorded.expandable_segments) {
    memory::AllocatorConfig config = recorded;
    config.expandable_segments = true;
    rows.push_back(row_for("expandable_segments:True", config));
  }
  for (std::size_t mb : {64, 128, 256, 512}) {
    if (recorded.max_split_size == mb * MiB || mb * MiB >= recorded_peak) continue;
    memory::AllocatorConfig config = recorded;
    config.max_split_size = mb * MiB;
    rows.push_back(row_for("max_split_size_mb:" + std::to_string(mb), config));
  }
  memory::RoundupTable quarters;
  quarters.fill(4);
  if (recorded.roundup_power2_divisions != quarters) {
    memory::AllocatorConfig config = recorded;
    config.roundup_power2_divisions = quarters;
    rows.push_back(row_for("roundup_power2_divisions:4", config));
  }
  if (!phases.boundaries.empty()) {
    rows.push_back(row_for("empty_cache() at " + phases.where(), recorded, phases.boundaries));
  }
  if (recorded.budget != memory::AllocatorConfig::kUnlimited) {
    if (const memory::GpuProfile* smaller = next_smaller_profile(recorded.budget)) {
      memory::AllocatorConfig config = recorded;
      config.budget = smaller->budget();
      config.budget_is_fraction = false;  // a card: the device refuses
      rows.push_back(RowRunner{device, plan, std::nullopt, measure_from}("budget " + smaller->name + " (" +
                                                           format_size(smaller->budget()) + ")", config));
    }
  }
  return rows;
}

const WhatIfRow* best_fix(const std::vector<WhatIfRow>& rows, bool at_largest_cap) {
  const WhatIfRow* best = nullptr;
  for (const WhatIfRow& row : rows) {
    const bool fits = at_largest_cap ? row.fits_at_largest_cap.value_or(false) : row.fits;
    if (row.as_recorded || !fits || row.budget < rows.front().budget) continue;
    if (best == nullptr || row.peak_reserved < best->peak_reserved) best = &row;
  }
  return best;
}

}  // namespace oomlab::replay
