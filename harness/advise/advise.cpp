#include "harness/advise/advise.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "harness/advise/bisect.hpp"
#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/runner/atomic_file.hpp"

namespace oomlab::advise {
namespace {

// One knob value the tree tries, and what it costs. The rank is the tree's order of cost: free
// settings first, then what is also faster, then what costs compute, then what changes the
// recipe (a smaller batch), as the seed's decision tree orders them.
struct KnobRemedy {
  const char* knob;
  const char* value;
  const char* step;
  const char* trade;
  int rank;
};

constexpr int kRankEnvironment = 0;
constexpr int kRankCodePath = 3;        // a scenario remedy that changes code, not a knob
constexpr int kRankValidation = 3;
constexpr int kRankSmallerBatch = 7;
constexpr int kRankStacked = 8;
constexpr double kTie = 0.02;  // measured throughputs this close are one speed

const KnobRemedy kKnobRemedies[] = {
    {"dtype", "bf16", "bf16 mixed precision", "faster on tensor cores; f32 master weights keep the update exact", 1},
    {"dtype", "f16", "fp16 with dynamic loss scaling",
     "for cards without bf16 (before Ampere); skipped steps on overflow", 1},
    {"attention", "fused", "fused (flash) attention", "faster; no T x T scores kept", 2},
    {"checkpointing", "true", "activation checkpointing", "recomputes each block's forward: about +33% compute", 4},
    {"micro_batches", "2", "gradient accumulation x2", "the same update from 2 smaller passes: smaller kernels", 5},
    {"micro_batches", "4", "gradient accumulation x4", "the same update from 4 smaller passes: smaller kernels", 5},
    {"micro_batches", "8", "gradient accumulation x8", "the same update from 8 smaller passes: smaller kernels", 5},
    {"offload", "true", "optimizer state offloaded to the CPU", "host-device traffic every step", 6},
};

int rank_of_knob(const std::string& knob) {
  int rank = kRankCodePath;
  for (const KnobRemedy& r : kKnobRemedies) {
    if (knob == r.knob) rank = std::min(rank == kRankCodePath ? r.rank : rank, r.rank);
  }
  return rank;
}

RunRecord run_dry(RunRequest request) {
  request.device = DeviceKind::dry;
  request.quiet = true;
  request.progress = false;
  request.trace_path.clear();
  return run_variant_in_process(request);
}

// The growth a run's leak detector reported (record_leak_metrics), in words; empty when none.
std::string leak_found(const RunRecord& record) {
  const auto metric = [&](const char* name) {
    const auto it = record.metrics.find(name);
    return it == record.metrics.end() ? 0.0 : it->second;
  };
  if (metric("leak_detected") < 1) return {};
  const auto per_step = static_cast<std::int64_t>(metric("leak_bytes_per_step"));
  std::string text = "memory grows " + format_size_delta(per_step) + " per step from step " +
                     std::to_string(static_cast<long long>(metric("leak_detected_at_step")));
  const double oom_step = metric("predicted_oom_step");
  if (oom_step > 0)
    text += ": at this budget it runs out at about step " + std::to_string(static_cast<long long>(oom_step));
  return text;
}

std::string outcome_text(const RunRecord& record) {
  std::string text = outcome_status_name(record.outcome.status);
  if (!record.outcome.diagnosis.empty()) text += " (" + record.outcome.diagnosis + ")";
  return text;
}

// The full knob list of a run, as --set settings.
KnobSettings settings_of(const std::map<std::string, std::string>& values) {
  return KnobSettings(values.begin(), values.end());
}

std::string describe_change(const std::string& variant, const std::string& base_variant,
                            const std::map<std::string, std::string>& values,
                            const std::map<std::string, std::string>& base_values, const std::string& conf) {
  std::string change;
  if (variant != base_variant) change += "--variant " + variant;
  std::map<std::string, std::string> differs;
  for (const auto& [knob, value] : values) {
    auto it = base_values.find(knob);
    if (it == base_values.end() || it->second != value) differs[knob] = value;
  }
  if (!differs.empty()) change += std::string(change.empty() ? "" : " ") + "--set " + describe_knobs(differs);
  if (!conf.empty()) change += std::string(change.empty() ? "" : " ") + "--alloc-conf " + conf;
  return change;
}

class Advisor {
 public:
  Advisor(const RunRequest& base, const AdviseOptions& options)
      : base_(base), options_(options), resolved_(resolve_run(base)),
        base_values_(resolved_.knobs.all()) {}

  Advice run() {
    advice_.as_given = run_dry(base_);
    const RunRecord& given = advice_.as_given;
    const std::string budget = resolved_.budget.describe();
    if (given.outcome.status == OutcomeStatus::ok) {
      if (const std::string growth = leak_found(given); !growth.empty()) {
        // It fits only because it stopped: `run` of the same variant reports the growth.
        advice_.path.push_back("as given it fits " + budget + " for its " + std::to_string(given.steps) +
                               " steps, but " + growth);
        advice_.path.push_back("a leak: fix it where it is kept; a smaller batch or a larger card only delays the "
                               "OOM (--steps runs longer)");
        advice_.stop_at_diagnosis = true;
        return advice_;
      }
      advice_.path.push_back("as given it fits " + budget + ": it needs " + format_size(given.memory.need) +
                             " in live tensors at its peak; nothing to fix");
      return advice_;
    }
    if (given.outcome.status != OutcomeStatus::oom) {
      throw std::runtime_error("as given the run ends in " + outcome_text(given) + ", not out of memory: " +
                               given.outcome.message);
    }
    std::string shortfall;
    if (given.memory.need > 0 && resolved_.budget.bytes != memory::AllocatorConfig::kUnlimited &&
        given.memory.need > resolved_.budget.bytes) {
      shortfall = ": it needs " + format_size(given.memory.need) + " in live tensors, short by " +
                  format_size(given.memory.need - resolved_.budget.bytes);
    }
    advice_.path.push_back("as given: " + outcome_text(given) + " at " + budget + shortfall);
    const std::string& diagnosis = given.outcome.diagnosis;
    if (diagnosis == "leak") {
      advice_.path.push_back("memory grows every step: a leak. Fix it where it is kept (below); a smaller "
                             "batch or a larger card only delays the OOM");
      advice_.path.push_back(given.outcome.message);
      advice_.stop_at_diagnosis = true;
      return advice_;
    }
    if (diagnosis == "external") {
      advice_.path.push_back("memory outside this allocator fills the card: run `oomlab doctor` to see the "
                             "other processes and contexts; no setting of this run frees it");
      advice_.stop_at_diagnosis = true;
      return advice_;
    }
    if (diagnosis == "fragmentation") {
      advice_.path.push_back("the run's bytes fit, the cache's shapes do not: allocator settings first (free)");
    }
    advice_.path.push_back(is_training() ? "a training run: precision, attention, recomputation, accumulation, "
                                           "offload, then a smaller batch"
                                         : "not a training run: the scenario's own remedies (dtype, streaming, ...)");
    try_environment();
    try_variants();
    try_knobs();
    try_bisected("val_batch", "smaller validation batch", "validation only: training is unchanged", kRankValidation);
    try_bisected("batch", "smaller batch", "changes the recipe: fewer samples per step (scale the learning rate)",
                 kRankSmallerBatch);
    if (std::none_of(advice_.candidates.begin(), advice_.candidates.end(), [](const Candidate& c) { return c.fits; })) {
      try_stacked();
    }
    add_costs();
    choose_best();
    return advice_;
  }

 private:
  bool is_training() const {
    return base_values_.count("batch") && (base_values_.count("micro_batches") || base_values_.count("checkpointing"));
  }

  // Tries `request` unless an identical run was tried already.
  void consider(Candidate candidate) {
    const std::string key = candidate.request.variant + "|" + describe_knob_settings(candidate.request.set) + "|" +
                            candidate.request.alloc_conf;
    if (!tried_.insert(key).second) return;
    try {
      resolve_run(candidate.request);  // knob combinations with no meaning are not applicable
    } catch (const std::invalid_argument&) {
      return;
    }
    const RunRecord record = run_dry(candidate.request);
    candidate.fits = record.outcome.status == OutcomeStatus::ok;
    // A fit's peak under the budget: a run that sizes itself to the card (a paged KV pool) needs
    // more with no cap than it takes here.
    candidate.need = candidate.fits ? record.memory.peak_allocated : record.memory.need;
    candidate.outcome = outcome_text(record);
    advice_.candidates.push_back(std::move(candidate));
  }

  Candidate candidate_with(const std::string& variant, const std::map<std::string, std::string>& values,
                           const std::string& conf) const {
    Candidate c;
    c.request = base_;
    c.request.variant = variant;
    c.request.set = settings_of(values);
    if (!conf.empty()) c.request.alloc_conf = base_.alloc_conf.empty() ? conf : base_.alloc_conf + "," + conf;
    c.change = describe_change(variant, base_.variant, values, base_values_, conf);
    return c;
  }

  void try_environment() {
    if (!resolved_.config.expandable_segments) {
      Candidate c = candidate_with(base_.variant, base_values_, "expandable_segments:true");
      c.step = "expandable segments";
      c.trade = "none measurable: freed space coalesces into one mapped range";
      c.rank = kRankEnvironment;
      consider(c);
    }
    if (advice_.as_given.outcome.diagnosis == "fragmentation" &&
        resolved_.config.max_split_size == memory::AllocatorConfig::kUnlimited) {
      for (const char* mb : {"128", "512"}) {
        Candidate c = candidate_with(base_.variant, base_values_, std::string("max_split_size_mb:") + mb);
        c.step = std::string("max_split_size_mb ") + mb;
        c.trade = "none measurable: large cached blocks are kept whole for large requests";
        c.rank = kRankEnvironment;
        consider(c);
      }
    }
  }

  // The scenario's other variants that tell a fix, with the user's knobs where the variant does
  // not set them differently (a batch is never taken from a variant: bisect finds it).
  void try_variants() {
    const Scenario& scenario = *resolved_.scenario;
    const auto base_defaults = scenario.variant_knobs(base_.variant, base_.scale);
    for (const VariantSpec& variant : scenario.variants()) {
      if (variant.name == base_.variant || variant.expected != Expect::ok) continue;
      std::map<std::string, std::string> values = base_values_;
      int rank = kRankCodePath;
      bool differs = false;
      for (const auto& [knob, value] : scenario.variant_knobs(variant.name, base_.scale)) {
        auto it = base_defaults.find(knob);
        if (it != base_defaults.end() && it->second == value) continue;
        differs = true;
        if (knob == "batch") continue;
        values[knob] = value;
        rank = std::min(rank, rank_of_knob(knob));
      }
      if (differs && values == base_values_) continue;  // only its batch differs
      Candidate c = candidate_with(variant.name, values, "");
      c.step = "the scenario's remedy " + variant.name + ": " + variant.description;
      c.trade = variant.changes_answers ? "it changes the answers; see the teaching page" : "see the teaching page";
      c.rank = rank;
      c.changes_answers = variant.changes_answers;
      consider(c);
    }
  }

  void try_knobs() {
    for (const KnobRemedy& remedy : kKnobRemedies) {
      auto it = base_values_.find(remedy.knob);
      if (it == base_values_.end() || it->second == remedy.value) continue;
      std::map<std::string, std::string> values = base_values_;
      values[remedy.knob] = remedy.value;
      Candidate c = candidate_with(base_.variant, values, "");
      c.step = remedy.step;
      c.trade = remedy.trade;
      c.rank = remedy.rank;
      consider(c);
    }
  }

  void try_bisected(const std::string& knob, const std::string& step, const std::string& trade, int rank) {
    if (!base_values_.count(knob)) return;
    const KnobBisection found = bisect_knob(base_, knob);
    // Only a smaller value of a knob whose memory grows with it is the remedy named here.
    if (found.more_needs_less || found.fitting <= 0 || found.fitting >= found.start) return;
    std::map<std::string, std::string> values = base_values_;
    values[knob] = std::to_string(found.fitting);
    Candidate c = candidate_with(base_.variant, values, "");
    c.step = step + " (the largest that fits)";
    c.trade = trade;
    c.rank = rank;
    consider(c);
  }

  // Nothing fits alone: the knob remedies stacked in the tree's order until the run fits.
  void try_stacked() {
    std::map<std::string, std::string> values = base_values_;
    std::string steps;
    for (const KnobRemedy& remedy : kKnobRemedies) {
      auto it = values.find(remedy.knob);
      if (it == values.end() || it->second == remedy.value) continue;
      if (std::string(remedy.knob) == "dtype" && std::string(remedy.value) == "f16") continue;  // bf16 is tried
      if (std::string(remedy.knob) == "micro_batches" &&
          values.at("micro_batches") != base_values_.at("micro_batches")) {
        continue;  // one accumulation factor in a stack
      }
      values[remedy.knob] = remedy.value;
      steps += (steps.empty() ? "" : " + ") + std::string(remedy.step);
      Candidate c = candidate_with(base_.variant, values, "");
      c.step = "stacked: " + steps;
      c.trade = "the costs of each";
      c.rank = kRankStacked;
      consider(c);
      if (!advice_.candidates.empty() && advice_.candidates.back().fits) return;
    }
  }

  // Throughput from committed records of this GPU (a variant's own settings) or --confirm runs.
  void add_costs() {
    std::vector<RunRecord> committed = committed_records();
    for (Candidate& c : advice_.candidates) {
      if (!c.fits) continue;
      if (options_.confirm) {
        RunRequest on_gpu = c.request;
        on_gpu.device = DeviceKind::cuda;
        on_gpu.progress = false;
        const RunRecord record = run_variant_in_child(on_gpu);
        if (record.outcome.status == OutcomeStatus::ok && !record.throughput.unit.empty()) {
          c.throughput = record.throughput.value;
          c.throughput_unit = record.throughput.unit;
          c.throughput_source = "confirmed on cuda";
        } else {
          c.fits = false;
          c.outcome = "on cuda: " + outcome_text(record);
        }
        continue;
      }
      const std::map<std::string, std::string> values = resolve_run(c.request).knobs.all();
      for (const RunRecord& r : committed) {
        if (r.variant == c.request.variant && knobs_of(r) == values && c.request.alloc_conf == base_.alloc_conf &&
            !r.throughput.unit.empty()) {
          c.throughput = r.throughput.value;
          c.throughput_unit = r.throughput.unit;
          c.throughput_source = "committed " + options_.results_dir;
        }
      }
    }
  }

  // A committed record's knob values; a knob it does not name (added after it was written) had
  // the variant's value. Empty when its variant no longer exists.
  std::map<std::string, std::string> knobs_of(const RunRecord& record) const {
    RunRequest at = base_;
    at.variant = record.variant;
    at.set.clear();
    std::map<std::string, std::string> knobs;
    try {
      knobs = resolve_run(at).knobs.all();
    } catch (const std::invalid_argument&) {
      return {};
    }
    for (const auto& [knob, value] : record.knobs) knobs[knob] = value;
    return knobs;
  }

  std::vector<RunRecord> committed_records() const {
    std::vector<RunRecord> records;
    if (options_.results_dir.empty()) return records;
    std::error_code error;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(options_.results_dir, error)) {
      if (entry.path().extension() != ".json") continue;
      try {
        const auto json = nlohmann::ordered_json::parse(read_text_file(entry.path().string()));
        for (const auto& item : json.is_array() ? json : nlohmann::ordered_json::array({json})) {
          RunRecord r = run_record_from_json(item);
          if (r.scenario == base_.scenario && r.device.kind == "cuda" && r.scale == scale_name(base_.scale) &&
              r.outcome.status == OutcomeStatus::ok) {
            records.push_back(std::move(r));
          }
        }
      } catch (const std::exception&) {
        // not a run record (a benchmark's JSON, a suite summary): nothing to take from it
      }
    }
    return records;
  }

  // The fix to take: the fastest of the fits whose cost was measured (one unit), said to be the
  // cheapest; when none was, the first in the tree's order of cost, and no claim of cheapness.
  // A fix that changes the answers is taken only when no other fits.
  void choose_best() {
    const bool one_keeps_answers = std::any_of(advice_.candidates.begin(), advice_.candidates.end(),
                                               [](const Candidate& c) { return c.fits && !c.changes_answers; });
    const auto eligible = [&](const Candidate& c) { return c.fits && !(one_keeps_answers && c.changes_answers); };
    for (std::size_t i = 0; i < advice_.candidates.size(); ++i) {
      const Candidate& c = advice_.candidates[i];
      if (!eligible(c) || c.throughput <= 0) continue;
      const Candidate* best = advice_.best ? &advice_.candidates[*advice_.best] : nullptr;
      if (!best) {
        advice_.best = i;
      } else if (c.throughput_unit == best->throughput_unit) {
        // Within kTie of each other two measurements are one speed (run-to-run noise is about
        // that): the tree's order of cost decides, not the noise.
        const bool tie = std::abs(c.throughput - best->throughput) <= kTie * best->throughput;
        if (tie ? c.rank < best->rank : c.throughput > best->throughput) advice_.best = i;
      }
    }
    advice_.best_is_measured = advice_.best.has_value();
    if (advice_.best_is_measured) return;
    for (std::size_t i = 0; i < advice_.candidates.size(); ++i) {
      const Candidate& c = advice_.candidates[i];
      if (eligible(c) && (!advice_.best || c.rank < advice_.candidates[*advice_.best].rank)) advice_.best = i;
    }
  }

  RunRequest base_;
  AdviseOptions options_;
  ResolvedRun resolved_;
  std::map<std::string, std::string> base_values_;
  std::set<std::string> tried_;
  Advice advice_;
};

}  // namespace

Advice advise(const RunRequest& base, const AdviseOptions& options) { return Advisor(base, options).run(); }

}  // namespace oomlab::advise
