#include "harness/replay/replay_report_verdict.hpp"

#include <cmath>

#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::replay {
namespace {

// The iteration (1-based) request `event` falls in: one more than the iteration starts before it.
std::size_t iteration_of(const Phases& phases, std::size_t event) {
  std::size_t iteration = 1;
  for (std::size_t level : phases.level_events) iteration += level < event;
  return iteration;
}

std::string leak_verdict(const ReplayReport& report) {
  const Growth& growth = report.iteration_growth;
  const std::string budget = memory::format_budget(report.config.budget);
  std::string text = "verdict: a leak, which no allocator setting fixes: " + describe_growth(growth);
  if (!report.fidelity.fits() && !report.fidelity.ooms.empty()) {
    const std::size_t event = report.fidelity.ooms.front().event;
    text += "; at this budget (" + budget + ") it runs out in iteration " +
            std::to_string(iteration_of(report.phases, event)) + " of " + std::to_string(growth.iterations);
  } else if (report.config.budget != memory::AllocatorConfig::kUnlimited && growth.bytes_per_iteration > 0 &&
             report.need_reserved <= report.config.budget) {
    // Each iteration raises the reserved peak by about the leak's rate.
    const double room = static_cast<double>(report.config.budget - report.need_reserved);
    const auto more = static_cast<std::size_t>(std::floor(room / growth.bytes_per_iteration));
    text += "; at this budget (" + budget + ", reserved peak " + format_size(report.need_reserved) +
            ") it runs out after about " + std::to_string(more) + " more iteration" + (more == 1 ? "" : "s");
  }
  return text + "; stop keeping those tensors (detach them, or drop the references each step)";
}

}  // namespace

std::string what_if_verdict(const ReplayReport& report) {
  if (report.what_if.empty()) return "";
  if (report.iteration_growth.leak) return leak_verdict(report);
  const WhatIfRow* best = best_fix(report.what_if);
  const WhatIfRow* best_at_largest = best_fix(report.what_if, true);
  const WhatIfRow& recorded = report.what_if.front();
  const std::string budget = memory::format_budget(report.config.budget);
  if (recorded.fits && best == nullptr)
    return "verdict: the run fits as recorded; no setting here lowers its reserved peak";
  if (best != nullptr) {
    return "verdict: " + best->setting + " fits, with a " + format_size(best->peak_reserved) + " reserved peak (" +
           (recorded.fits ? "as recorded: " + format_size(recorded.peak_reserved) : "as recorded it fails") +
           "; budget " + budget + ")";
  }
  if (best_at_largest != nullptr && report.budget_range.high) {
    return "verdict: " + best_at_largest->setting + " fits if the run's cap was near " +
           format_size(*report.budget_range.high) +
           ", the largest the trace allows, not at the tightest: give the real one with --budget";
  }
  if (report.need_allocated > report.config.budget) {
    return "verdict: no allocator setting fits: the live bytes alone (" + format_size(report.need_allocated) +
           ") exceed the budget (" + budget +
           "); lower the peak (smaller batch, bf16, checkpointing) or use a larger card";
  }
  return "verdict: no setting here fits: the live bytes (" + format_size(report.need_allocated) +
         ") are within the budget (" + budget + "), but the cache around them is not (" +
         format_size(report.need_reserved) + " reserved without a cap); lower the peak or use a larger card";
}

}  // namespace oomlab::replay
