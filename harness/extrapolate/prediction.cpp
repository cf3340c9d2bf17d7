#include "harness/extrapolate/prediction.hpp"

#include <stdexcept>

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

// Whether the replay at `at` fits; a size past any GPU does not.
bool fits_at(const Extrapolation& model, std::int64_t at, const memory::AllocatorConfig& config, bool with_bound) {
  replay::DeviceEvents events;
  try {
    events = synthesise(model, at);
  } catch (const std::range_error&) {
    return false;
  }
  const replay::ReplayResult result = run(events, plan_of(events), config);
  if (!result.fits()) return false;
  if (!with_bound || config.budget == memory::AllocatorConfig::kUnlimited) return true;
  Prediction bounded;
  bounded.result = result;
  bounded.bound_bytes = model.unaligned_bound(at);
  return bounded.reserved_bound() <= config.budget;
}

// Largest value in [1, kLargestKnobValue] with fits(value), for a monotone predicate.
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

}  // namespace

std::uint64_t Prediction::reserved_bound() const {
  if (bound_bytes == 0) return result.peak_reserved;
  return result.peak_reserved + (bound_bytes + kSegmentGranule - 1) / kSegmentGranule * kSegmentGranule;
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
  bool unbounded = false;
  answer.largest = largest_fitting(
      [&](std::int64_t at) {
        ++answer.replays;
        return fits_at(model, at, setup.config, false);
      },
      unbounded);
  answer.unbounded = unbounded;
  if (answer.largest && !model.exact()) {
    bool ignored = false;
    answer.largest_within_bound = largest_fitting(
        [&](std::int64_t at) {
          if (at > *answer.largest) return false;
          ++answer.replays;
          return fits_at(model, at, setup.config, true);
        },
        ignored);
  }
  return answer;
}

}  // namespace oomlab::extrapolate
