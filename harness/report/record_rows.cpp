// Rows for matched run records: outcome, budget and knobs when they moved, the peaks, the
// per-tag peaks and the throughput against the noise of the steps; two replays' own rows after.
#include <limits>
#include <map>

#include "harness/memory/size.hpp"
#include "harness/report/comparison_rows.hpp"
#include "harness/report/number_format.hpp"
#include "harness/report/record_fields.hpp"
#include "harness/report/step_noise.hpp"
#include "harness/runner/knobs.hpp"

namespace oomlab::report::detail {

namespace {

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

std::string budget_text(std::uint64_t bytes) { return bytes == kUnlimited ? "unlimited" : format_size(bytes); }

class RowsFor {
 public:
  RowsFor(const RecordPair& pair, Comparison& comparison)
      : a_(pair.a->record), b_(pair.b->record), comparison_(comparison) {
    item_ = record_name(a_);
    setting_ = record_setting(a_);
    if (pair.across_devices) setting_ += " vs " + b_.device.kind;
  }

  void outcome() {
    ComparisonRow row = start("outcome", "");
    row.a_text = describe_outcome(a_.outcome);
    row.b_text = describe_outcome(b_.outcome);
    if (row.a_text == row.b_text) {
      row.verdict = Verdict::same;
    } else if (replays() && a_.outcome.status != b_.outcome.status) {
      // A replay's expectation is what PyTorch did, not a story: the run that fits is the better one.
      const bool a_fits = a_.outcome.status == OutcomeStatus::ok, b_fits = b_.outcome.status == OutcomeStatus::ok;
      row.verdict = a_fits == b_fits ? Verdict::changed : (b_fits ? Verdict::better : Verdict::worse);
      if (b_fits) row.delta_text = "the OOM is gone";
    } else if (a_.matches_expectation != b_.matches_expectation) {
      // The story held and no longer does (or the reverse): a fixed variant that now runs out
      // of memory, a broken one that no longer reproduces.
      row.verdict = a_.matches_expectation ? Verdict::worse : Verdict::better;
      row.delta_text = b_.matches_expectation ? "now as expected" : "expected " + b_.expected;
    } else {
      row.verdict = Verdict::changed;
      if (a_.outcome.status == b_.outcome.status && a_.outcome.step >= 0 && b_.outcome.step >= 0) {
        row.delta_text = "step " + std::to_string(a_.outcome.step) + " -> " + std::to_string(b_.outcome.step);
      }
    }
    add(std::move(row));
  }

  // A different budget or different knobs explain every other row: say so first.
  void setting_changes() {
    if (a_.budget.bytes != b_.budget.bytes) {
      ComparisonRow row = start("budget", "bytes");
      row.a_text = budget_text(a_.budget.bytes);
      row.b_text = budget_text(b_.budget.bytes);
      row.verdict = Verdict::changed;
      add(std::move(row));
    }
    if (a_.knobs != b_.knobs && !a_.knobs.empty() && !b_.knobs.empty()) {
      ComparisonRow row = start("knobs", "");
      row.a_text = describe_knobs(a_.knobs);
      row.b_text = describe_knobs(b_.knobs);
      row.verdict = Verdict::changed;
      add(std::move(row));
    }
  }

  // Peaks: lower is better. Exact agreement is required across devices (the allocation
  // sequence is the same on dry, host and cuda). 0 means unknown for need.
  // stopped_peak: the metric is what the run reached before it ended (not the planned need), so
  // a run that ended at an OOM somewhere the other did not has no comparable value.
  void bytes(const std::string& metric, std::uint64_t a, std::uint64_t b, double threshold, bool exact,
             bool zero_is_unknown = false, bool stopped_peak = true) {
    if (zero_is_unknown && (a == 0 || b == 0)) return;
    ComparisonRow row = start(metric, "bytes");
    row.a = static_cast<double>(a);
    row.b = static_cast<double>(b);
    row.a_text = format_size(a);
    row.b_text = format_size(b);
    row.delta_text = format_size_delta(static_cast<std::int64_t>(b - a));
    if (a != 0) row.ratio = static_cast<double>(b) / static_cast<double>(a);
    if (exact) {
      row.verdict = a == b ? Verdict::same : Verdict::differs;
    } else if (const std::string why = stopped_elsewhere(); !stopped_peak || why.empty()) {
      row.verdict = judge(*row.a, *row.b, Better::lower, threshold, -1, -1);
    } else {
      row.verdict = Verdict::changed;  // a run that stopped at an OOM peaked where it stopped
      row.delta_text = "not comparable: " + why;
    }
    add(std::move(row));
  }

  void throughput(double threshold) {
    const Throughput& a = a_.throughput;
    const Throughput& b = b_.throughput;
    if (a.unit.empty() || b.unit.empty() || a.value <= 0 || b.value <= 0) return;  // dry, baselines
    ComparisonRow row = start("throughput", a.unit);
    const StepNoise noise_a = step_noise(a_);
    const StepNoise noise_b = step_noise(b_);
    row.noise_a = noise_a.relative;
    row.noise_b = noise_b.relative;
    row.a_text = throughput_text(a_);
    row.b_text = throughput_text(b_);
    if (a.unit != b.unit) {
      row.verdict = Verdict::changed;  // a different unit of work: not comparable
      add(std::move(row));
      return;
    }
    row.a = a.value;
    row.b = b.value;
    row.ratio = b.value / a.value;
    row.delta_text = (b.value >= a.value ? "+" : "") + format_number(b.value - a.value) + " " + a.unit;
    row.verdict = judge(a.value, b.value, Better::higher, threshold, row.noise_a, row.noise_b);
    add(std::move(row));
  }

  // Why the two runs' peaks measure different spans: one ran out of memory where the other did
  // not (or at another step). Empty when they ended alike.
  std::string stopped_elsewhere() const {
    const auto oom_at = [](const RunRecord& r) {
      return r.outcome.step >= 0 ? "ran out of memory at step " + std::to_string(r.outcome.step)
                                 : std::string("ran out of memory");
    };
    const bool a_oom = a_.outcome.status == OutcomeStatus::oom, b_oom = b_.outcome.status == OutcomeStatus::oom;
    if (!a_oom && !b_oom) return {};
    if (a_oom && b_oom && a_.outcome.step == b_.outcome.step) return {};
    if (a_oom && b_oom) return "A " + oom_at(a_) + ", B " + oom_at(b_);
    return (a_oom ? "A " + oom_at(a_) : "B " + oom_at(b_)) + ": its peak is where it stopped";
  }

  bool replays() const { return a_.scenario == "replay" && b_.scenario == "replay"; }
  const std::string& item() const { return item_; }
  const std::string& setting() const { return setting_; }
  const RunRecord& a() const { return a_; }
  const RunRecord& b() const { return b_; }

 private:
  ComparisonRow start(const std::string& metric, const std::string& unit) const {
    return start_row(item_, setting_, metric, unit);
  }
  void add(ComparisonRow row) { comparison_.rows.push_back(std::move(row)); }

  const RunRecord& a_;
  const RunRecord& b_;
  Comparison& comparison_;
  std::string item_, setting_;
};

}  // namespace

void add_record_rows(const RecordMatch& match, const MetricSelection& metrics, double threshold,
                     Comparison& comparison) {
  for (const RecordPair& pair : match.pairs) {
    const bool exact = pair.across_devices;
    RowsFor rows(pair, comparison);
    const MemoryRecord& a = rows.a().memory;
    const MemoryRecord& b = rows.b().memory;
    if (metrics.wants("outcome")) rows.outcome();
    rows.setting_changes();
    if (metrics.wants("peak_allocated"))
      rows.bytes("peak_allocated", a.peak_allocated, b.peak_allocated, threshold, exact);
    if (metrics.wants("peak_reserved")) rows.bytes("peak_reserved", a.peak_reserved, b.peak_reserved, threshold, exact);
    if (metrics.wants("need")) {
      // The need is planned without a cap: comparable whether or not either run ran out.
      rows.bytes("need", a.need, b.need, threshold, exact, true, false);
      rows.bytes("need_reserved", a.need_reserved, b.need_reserved, threshold, exact, true, false);
    }
    // A baseline has no device-level number; across devices dry's is simulated.
    const bool device_used_known = !pair.a->baseline && !pair.b->baseline && !pair.across_devices;
    if (metrics.wants("peak_device_used") && device_used_known) {
      rows.bytes("peak_device_used", a.peak_device_used, b.peak_device_used, threshold, false);
    }
    if (metrics.wants("tags")) {
      std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> tags;
      for (const auto& [tag, bytes] : a.per_tag_peak) tags[tag].first = bytes;
      for (const auto& [tag, bytes] : b.per_tag_peak) tags[tag].second = bytes;
      for (const auto& [tag, peaks] : tags) {
        if (peaks.first != 0 || peaks.second != 0)
          rows.bytes("tag " + tag, peaks.first, peaks.second, threshold, exact);
      }
    }
    if (metrics.wants("throughput") && !pair.across_devices) rows.throughput(threshold);
    if (metrics.wants("replay") && rows.replays()) {
      add_replay_rows(rows.a(), rows.b(), rows.item(), rows.setting(), threshold, comparison);
    }
  }
}

}  // namespace oomlab::report::detail
