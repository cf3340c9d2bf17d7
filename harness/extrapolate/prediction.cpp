#include "harness/extrapolate/prediction.hpp"

#include <algorithm>
#include <stdexcept>

#include "harness/memory/alloc_rounding.hpp"
#include "harness/memory/budget.hpp"
#include "harness/memory/oom_error.hpp"
#include "harness/memory/size.hpp"
#include "harness/replay/allocation_sites_frames.hpp"
#include "harness/replay/replay_plan.hpp"
#include "harness/replay/replay_settings.hpp"

namespace oomlab::extrapolate {
namespace {

constexpr std::size_t kFramesShown = 12;
constexpr std::size_t kSitesShown = 8;
constexpr std::uint64_t kSegmentGranule = 2 * MiB;

// The plan of a trace with no segment decisions: every request a step of its own. The empty
// snapshot says no segment existed before the trace, which is true of the synthesised run.
replay::ReplayPlan plan_of(const replay::DeviceEvents& events) {
  return replay::plan_replay(events, replay::Snapshot{});
}

replay::ReplayResult run(const replay::DeviceEvents& events, const replay::ReplayPlan& plan,
                         const memory::AllocatorConfig& config) {
  replay::ReplayOptions options;
  options.config = config;
  return replay::replay(events, plan, options);
}

replay::OomFinding find_oom(const Prediction& prediction, const replay::StackTable& stacks) {
  const replay::ReplayOom& failed = prediction.result.ooms.front();
  replay::OomFinding finding;
  finding.event = failed.event;
  finding.request = replay::describe_request(prediction.events, failed.event);
  finding.site = replay::site_of(stacks, prediction.events.events[failed.event].frames);
  finding.frames = replay::stack_lines(stacks, prediction.events.events[failed.event].frames, kFramesShown);
  finding.info = failed.info;
  finding.info.need_allocated = static_cast<std::size_t>(prediction.need_allocated);
  finding.info.need_reserved = static_cast<std::size_t>(prediction.need_reserved);
  memory::diagnose(finding.info);
  finding.message = memory::OomError(finding.info).what();
  return finding;
}

// Live bytes at the peak of a synthesised trace, each request rounded as the allocator rounds it
// (a block can be larger, never smaller): a lower bound of the replay's allocated, and so of its
// reserved, peak, computed in a pass where a replay runs the allocator.
std::uint64_t rounded_live_peak(const replay::DeviceEvents& events, const memory::RoundupTable& roundup) {
  std::vector<bool> live(events.events.size(), false);
  std::uint64_t bytes = 0, peak = 0;
  for (std::size_t i = 0; i < events.events.size(); ++i) {
    const replay::ReplayEvent& e = events.events[i];
    if (e.kind == replay::ReplayEventKind::alloc) {
      live[i] = true;
      bytes += memory::round_request(static_cast<std::size_t>(e.size), roundup);
      peak = std::max(peak, bytes);
    } else if (is_free(e.kind) && e.alloc_event != replay::kNoEvent && live[e.alloc_event]) {
      live[e.alloc_event] = false;
      bytes -= memory::round_request(static_cast<std::size_t>(events.events[e.alloc_event].size), roundup);
    }
  }
  return peak;
}

// What one bisection probe learns at a knob value.
struct Probe {
  bool fits = false;
  std::uint64_t peak_reserved = 0;
};

class Bisection {
 public:
  Bisection(const Extrapolation& model, const memory::AllocatorConfig& config, std::size_t& replays)
      : model_(model), config_(config), replays_(replays) {}

  // Cheap and sound: false when even the live bytes pass the budget (or a size passes any GPU).
  bool may_fit(std::int64_t at) const {
    try {
      return rounded_live_peak(synthesise(model_, at), config_.roundup_power2_divisions) <= config_.budget;
    } catch (const std::range_error&) {
      return false;
    }
  }

  Probe replay_at(std::int64_t at, bool with_bound) {
    ++replays_;
    const replay::DeviceEvents events = synthesise(model_, at);
    Prediction probe;
    probe.result = run(events, plan_of(events), config_);
    probe.need_reserved = probe.result.peak_reserved;  // only read when the probe fits
    probe.bound_bytes = with_bound ? model_.unaligned_bound(at) : 0;
    return {probe.result.fits() && probe.reserved_bound() <= config_.budget, probe.result.peak_reserved};
  }

 private:
  const Extrapolation& model_;
  const memory::AllocatorConfig& config_;
  std::size_t& replays_;
};

// Largest value in [1, kLargestKnobValue] with fits(value), for a monotone predicate: doubling,
// then bisection.
template <typename Fits>
std::optional<std::int64_t> largest_fitting(Fits fits, bool& unbounded) {
  unbounded = false;
  if (!fits(1)) return std::nullopt;
  std::int64_t good = 1, bad = 2;
  while (fits(bad)) {
    good = bad;
    if (bad == kLargestKnobValue) {
      unbounded = true;
      return good;
    }
    bad = std::min(bad * 2, kLargestKnobValue);
  }
  while (bad - good > 1) {
    const std::int64_t mid = good + (bad - good) / 2;
    (fits(mid) ? good : bad) = mid;
  }
  return good;
}

// The same in [1, upper] (upper + 1 known not to fit), galloping out from a guess near the
// answer: a few probes when the guess is within a few percent.
template <typename Fits>
std::optional<std::int64_t> largest_fitting_near(Fits fits, std::int64_t guess, std::int64_t upper) {
  guess = std::clamp<std::int64_t>(guess, 1, upper);
  std::int64_t good = 0, bad = upper + 1, step = 1;  // good 0: nothing known to fit
  if (fits(guess)) {
    good = guess;
    while (good + step < bad && fits(good + step)) {
      good += step;
      step *= 2;
    }
    bad = std::min(bad, good + step);
  } else {
    bad = guess;
    while (bad - step >= 1 && !fits(bad - step)) {
      bad -= step;
      step *= 2;
    }
    good = std::max<std::int64_t>(0, bad - step);
  }
  while (bad - good > 1) {
    const std::int64_t mid = good + (bad - good) / 2;
    (fits(mid) ? good : bad) = mid;
  }
  if (good == 0) return std::nullopt;
  return good;
}

}  // namespace

std::uint64_t Prediction::reserved_bound() const {
  if (bound_bytes == 0) return need_reserved;
  return need_reserved + (bound_bytes + kSegmentGranule - 1) / kSegmentGranule * kSegmentGranule;
}

ReplaySetup replay_setup(const Extrapolation& model, const PredictionSettings& settings) {
  ReplaySetup setup;
  const replay::SnapshotSettings recorded = replay::snapshot_settings(model.reference_trace().snapshot);
  setup.config = recorded.config;
  setup.notes = recorded.notes;
  setup.origin = "the reference's: " + recorded.origin;
  if (!settings.alloc_conf.empty()) {
    setup.config = memory::parse_alloc_conf(settings.alloc_conf, setup.config, "--alloc-conf");
    for (const std::string& note : setup.config.notes) setup.notes.push_back(note);
    setup.config.notes.clear();
  }
  if (settings.budget.empty()) {
    setup.config.budget = memory::AllocatorConfig::kUnlimited;
    setup.budget_text = "unlimited (--budget sets a card or a size)";
    return setup;
  }
  const memory::Budget budget = memory::parse_budget(settings.budget);
  setup.config.budget = budget.bytes;
  setup.budget_text = budget.describe() + " (--budget)";
  // As `oomlab replay` caps: a card's memory as the device does, a size as
  // set_per_process_memory_fraction does (replay_report.cpp, set_cap_kind).
  setup.config.budget_is_fraction = budget.profile.empty();
  if (!setup.config.budget_is_fraction && setup.config.garbage_collection_threshold > 0) {
    setup.config.garbage_collection_threshold = 0;
    setup.notes.push_back("garbage_collection_threshold is set, but PyTorch collects only under "
                          "set_per_process_memory_fraction and this cap is the card's: not collected");
  }
  return setup;
}

Prediction predict(const Extrapolation& model, std::int64_t at, const PredictionSettings& settings) {
  Prediction prediction;
  prediction.at = at;
  prediction.setup = replay_setup(model, settings);
  prediction.events = synthesise(model, at);
  const replay::ReplayPlan plan = plan_of(prediction.events);
  const memory::AllocatorConfig& config = prediction.setup.config;
  prediction.result = run(prediction.events, plan, config);
  prediction.need_allocated = prediction.result.peak_allocated;
  prediction.need_reserved = prediction.result.peak_reserved;
  const bool cap_acted = !prediction.result.fits() || config.garbage_collection_threshold > 0;
  if (cap_acted && config.budget != memory::AllocatorConfig::kUnlimited) {
    memory::AllocatorConfig uncapped = config;
    uncapped.budget = memory::AllocatorConfig::kUnlimited;
    const replay::ReplayResult need = run(prediction.events, plan, uncapped);
    prediction.need_allocated = need.peak_allocated;
    prediction.need_reserved = need.peak_reserved;
  }
  prediction.bound_bytes = model.unaligned_bound(at);
  const replay::StackTable& stacks = model.reference_trace().snapshot.stacks;
  if (!prediction.result.fits()) prediction.oom = find_oom(prediction, stacks);
  prediction.phases = replay::find_phases(prediction.events, config.roundup_power2_divisions);
  if (prediction.result.peak_allocated > 0) {
    prediction.top_sites = replay::top_sites(prediction.events, stacks, prediction.result.peak_allocated_event,
                                             config.roundup_power2_divisions, kSitesShown);
  }
  if (settings.what_if) prediction.what_if = replay::what_if(prediction.events, plan, config, prediction.phases);
  return prediction;
}

BisectAnswer bisect(const Extrapolation& model, const PredictionSettings& settings) {
  const ReplaySetup setup = replay_setup(model, settings);
  BisectAnswer answer;
  Bisection search(model, setup.config, answer.replays);
  // The live bytes bound the answer from above in milliseconds; the replays then start next to
  // it, at the value where the reserved peak scales to the budget.
  bool unbounded = false;
  const std::optional<std::int64_t> upper =
      largest_fitting([&](std::int64_t at) { return search.may_fit(at); }, unbounded);
  if (!upper) return answer;
  const Probe at_upper = search.replay_at(*upper, false);
  if (at_upper.fits) {
    answer.largest = upper;
    answer.unbounded = unbounded;
  } else {
    const double scale = static_cast<double>(setup.config.budget) /
                         static_cast<double>(std::max<std::uint64_t>(1, at_upper.peak_reserved));
    const auto guess = static_cast<std::int64_t>(static_cast<double>(*upper) * std::min(1.0, scale));
    answer.largest = largest_fitting_near([&](std::int64_t at) { return search.replay_at(at, false).fits; }, guess,
                                          *upper - 1);
  }
  if (answer.largest && !model.exact()) {
    answer.largest_within_bound = largest_fitting_near([&](std::int64_t at) { return search.replay_at(at, true).fits; },
                                                       *answer.largest, *answer.largest);
  }
  return answer;
}

}  // namespace oomlab::extrapolate
