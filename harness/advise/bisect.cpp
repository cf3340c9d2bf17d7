#include "harness/advise/bisect.hpp"

#include <algorithm>
#include <stdexcept>

#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::advise {
namespace {

// One probe: the run, told to be quick and quiet. Memory decides; anything else is an error.
Probe probe(RunRequest request, std::string setting) {
  request.plan_need = false;
  request.quiet = true;
  request.progress = false;
  request.trace_path.clear();
  const RunRecord record = run_variant_in_process(request);
  if (record.outcome.status != OutcomeStatus::ok && record.outcome.status != OutcomeStatus::oom) {
    throw std::runtime_error(setting + ": the run failed for another reason than memory: " +
                             record.outcome.message);
  }
  Probe result{std::move(setting), record.outcome.status == OutcomeStatus::ok, 0};
  if (result.fits) result.need = record.memory.peak_allocated;
  return result;
}

std::string bytes_setting(std::size_t bytes) { return std::to_string(bytes) + "B"; }

const KnobSpec& integer_knob(const Scenario& scenario, const std::string& name) {
  for (const KnobSpec& spec : scenario.knobs()) {
    if (spec.name != name) continue;
    if (spec.kind != KnobSpec::Kind::integer) {
      throw std::invalid_argument("--knob " + name + ": bisect searches whole-number knobs; " + name +
                                  " takes " + spec.accepted());
    }
    return spec;
  }
  std::string names;
  for (const KnobSpec& spec : scenario.knobs()) {
    if (spec.kind == KnobSpec::Kind::integer) names += (names.empty() ? "" : ", ") + spec.name;
  }
  throw std::invalid_argument("--knob " + name + ": " + scenario.name() + " has no such knob; its whole-number knobs: " +
                              (names.empty() ? "none" : names));
}

void set_knob(RunRequest& request, const std::string& name, std::int64_t value) {
  for (auto& [key, text] : request.set) {
    if (key == name) {
      text = std::to_string(value);
      return;
    }
  }
  request.set.emplace_back(name, std::to_string(value));
}

}  // namespace

BudgetBisection bisect_budget(RunRequest base, std::size_t resolution) {
  BudgetBisection result;
  RunRequest uncapped = base;
  uncapped.budget = "unlimited";
  uncapped.plan_need = false;
  uncapped.quiet = true;
  uncapped.progress = false;
  const RunRecord plan = run_variant_in_process(uncapped);
  if (plan.outcome.status != OutcomeStatus::ok) {
    throw std::runtime_error("without a cap the run does not finish: " + plan.outcome.message);
  }
  result.need = plan.memory.peak_allocated;
  result.need_reserved = plan.memory.peak_reserved;
  result.probes.push_back({"budget unlimited", true, result.need});

  // Invariant: `high` fits (the uncapped reserved peak never meets its cap); `low` fails or is
  // the first candidate not yet tried.
  std::size_t high = result.need_reserved;
  std::size_t low = result.need / resolution * resolution;
  if (low == 0) low = resolution;
  const Probe at_low = probe([&] { RunRequest r = base; r.budget = bytes_setting(low); return r; }(),
                             "budget " + format_size(low));
  result.probes.push_back(at_low);
  if (at_low.fits) {
    result.smallest_fitting = low;
    return result;
  }
  while (high - low > resolution) {
    const std::size_t middle = low + std::max(resolution, (high - low) / 2 / resolution * resolution);
    RunRequest request = base;
    request.budget = bytes_setting(middle);
    const Probe tried = probe(request, "budget " + format_size(middle));
    result.probes.push_back(tried);
    (tried.fits ? high : low) = middle;
  }
  result.smallest_fitting = high;
  result.largest_failing = low;
  return result;
}

KnobBisection bisect_knob(RunRequest base, const std::string& knob) {
  const ResolvedRun resolved = resolve_run(base);
  const KnobSpec& spec = integer_knob(*resolved.scenario, knob);
  KnobBisection result;
  result.knob = knob;
  result.start = resolved.knobs.integer(knob);
  // A batch is split over micro_batches: only its multiples are runs.
  if (knob == "batch" && resolved.knobs.has("micro_batches")) result.step = resolved.knobs.integer("micro_batches");
  const auto try_value = [&](std::int64_t value) {
    RunRequest request = base;
    set_knob(request, knob, value);
    Probe tried = probe(request, knob + "=" + std::to_string(value));
    result.probes.push_back(tried);
    return tried.fits;
  };
  const std::int64_t lowest = (spec.min + result.step - 1) / result.step * result.step;
  const std::int64_t highest = spec.max / result.step * result.step;
  // Invariant: `fit` fits (0: none known), `fail` does not (0: none known).
  std::int64_t fit = 0, fail = 0;
  std::int64_t value = std::max(lowest, std::min(highest, result.start / result.step * result.step));
  if (try_value(value)) {
    fit = value;
    // Double until it fails or reaches the knob's maximum.
    while (fail == 0 && fit < highest) {
      const std::int64_t next = std::min(highest, fit * 2);
      if (try_value(next)) fit = next; else fail = next;
    }
  } else {
    fail = value;
    while (fit == 0 && fail > lowest) {
      const std::int64_t next = std::max(lowest, fail / 2 / result.step * result.step);
      if (try_value(next)) fit = next; else fail = next;
    }
  }
  while (fit != 0 && fail != 0 && fail - fit > result.step) {
    const std::int64_t middle = fit + std::max(result.step, (fail - fit) / 2 / result.step * result.step);
    if (try_value(middle)) fit = middle; else fail = middle;
  }
  result.largest_fitting = fit;
  result.smallest_failing = fail;
  return result;
}

}  // namespace oomlab::advise
