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
  throw std::invalid_argument("--knob " + name + ": " + scenario.name() +
                              " has no such knob; its whole-number knobs: " + (names.empty() ? "none" : names));
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

namespace {

// The values bisect may try: multiples of `step` in [lowest, highest] that the scenario accepts
// with the run's other settings (resolve_run's checks: no run is made to find out).
class KnobDomain {
 public:
  KnobDomain(const RunRequest& base, std::string knob, std::int64_t step, std::int64_t lowest, std::int64_t highest)
      : base_(base), knob_(std::move(knob)), step_(step), lowest_(lowest), highest_(highest) {}

  std::int64_t lowest() const { return lowest_; }
  std::int64_t highest() const { return highest_; }
  std::int64_t align(std::int64_t value) const { return value / step_ * step_; }

  bool accepts(std::int64_t value) const {
    if (value < lowest_ || value > highest_ || value % step_ != 0) return false;
    RunRequest request = base_;
    set_knob(request, knob_, value);
    try {
      resolve_run(request);
      return true;
    } catch (const std::invalid_argument&) {
      return false;
    }
  }

  // The accepted value in [low, high] nearest `target`, or 0 when there is none within kScan
  // steps of it (an empty range too): constraints such as divisibility leave accepted values close.
  std::int64_t nearest(std::int64_t target, std::int64_t low, std::int64_t high) const {
    low = std::max(low, lowest_);
    high = std::min(high, highest_);
    if (low > high) return 0;
    target = align(std::clamp(target, low, high));
    for (std::int64_t distance = 0; distance <= kScan; ++distance) {
      const std::int64_t below = target - distance * step_, above = target + distance * step_;
      if (below < low && above > high) break;
      if (below >= low && accepts(below)) return below;
      if (distance > 0 && above <= high && accepts(above)) return above;
    }
    return 0;
  }

 private:
  static constexpr std::int64_t kScan = 4096;
  RunRequest base_;
  std::string knob_;
  std::int64_t step_, lowest_, highest_;
};

// Whether the run needs less memory at `b` than at `a` (a < b): two uncapped runs' peaks.
bool needs_less_at(RunRequest base, const std::string& knob, std::int64_t a, std::int64_t b,
                   std::vector<Probe>& probes) {
  base.budget = "unlimited";
  std::size_t need[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    RunRequest request = base;
    set_knob(request, knob, i == 0 ? a : b);
    Probe tried = probe(request, knob + "=" + std::to_string(i == 0 ? a : b) + " uncapped");
    need[i] = tried.need;
    probes.push_back(std::move(tried));
  }
  return need[1] < need[0];
}

}  // namespace

KnobBisection bisect_knob(RunRequest base, const std::string& knob) {
  const ResolvedRun resolved = resolve_run(base);
  const KnobSpec& spec = integer_knob(*resolved.scenario, knob);
  if (resolved.budget.bytes == memory::AllocatorConfig::kUnlimited) {
    throw std::invalid_argument("--knob " + knob + " searches for the value that fits a budget, and with no cap every "
                                "value fits: give --budget (a size or a GPU profile)");
  }
  KnobBisection result;
  result.knob = knob;
  result.start = resolved.knobs.integer(knob);
  // The knob's own step (lr_size: 4); a batch is split over micro_batches: only its multiples run.
  result.step = spec.multiple_of;
  if (knob == "batch" && resolved.knobs.has("micro_batches")) result.step = resolved.knobs.integer("micro_batches");
  const KnobDomain domain(base, knob, result.step, (spec.min + result.step - 1) / result.step * result.step,
                          spec.max / result.step * result.step);
  const auto try_value = [&](std::int64_t value) {
    RunRequest request = base;
    set_knob(request, knob, value);
    Probe tried = probe(request, knob + "=" + std::to_string(value));
    result.probes.push_back(tried);
    return tried.fits;
  };
  const std::int64_t start = domain.nearest(result.start, domain.lowest(), domain.highest());
  if (start == 0)
    throw std::invalid_argument("--knob " + knob + ": the scenario accepts no value of it with these settings");

  // The direction, from the start and the accepted value nearest twice it (or half of it).
  std::int64_t other = domain.nearest(start * 2, start + result.step, domain.highest());
  if (other == 0) other = domain.nearest(start / 2, domain.lowest(), start - result.step);
  if (other != 0) {
    result.more_needs_less = needs_less_at(base, knob, std::min(start, other), std::max(start, other), result.probes);
  }
  // Toward more memory and toward less: doubling or halving, by the direction.
  const bool up_needs_more = !result.more_needs_less;
  const auto toward_more = [&](std::int64_t v) { return up_needs_more ? std::min(domain.highest(), v * 2) : v / 2; };
  const auto toward_less = [&](std::int64_t v) { return up_needs_more ? v / 2 : std::min(domain.highest(), v * 2); };
  // The accepted value nearest `target` past `from` on target's side, up to target.
  const auto next_from = [&](std::int64_t from, std::int64_t target) {
    return target > from ? domain.nearest(target, from + result.step, target)
                         : domain.nearest(target, target, from - result.step);
  };

  // Invariant: `fit` fits (0: none known), `fail` does not (0: none known).
  std::int64_t fit = 0, fail = 0;
  if (try_value(start)) {
    fit = start;
    while (fail == 0) {
      const std::int64_t next = next_from(fit, toward_more(fit));
      if (next == 0) break;  // the last accepted value on that side fits
      (try_value(next) ? fit : fail) = next;
    }
  } else {
    fail = start;
    while (fit == 0) {
      const std::int64_t next = next_from(fail, toward_less(fail));
      if (next == 0) break;  // not even the last accepted value on that side fits
      (try_value(next) ? fit : fail) = next;
    }
  }
  while (fit != 0 && fail != 0) {
    const std::int64_t middle = domain.nearest(fit + (fail - fit) / 2, std::min(fit, fail) + result.step,
                                               std::max(fit, fail) - result.step);
    if (middle == 0) break;  // no accepted value between them: `fit` is the answer
    (try_value(middle) ? fit : fail) = middle;
  }
  result.fitting = fit;
  result.failing = fail;
  return result;
}

}  // namespace oomlab::advise
