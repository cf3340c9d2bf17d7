// The leak detector: step-boundary samples, trace-based site attribution, fits and the verdict.
#include "harness/leak/leak_detector.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::leak {
namespace {

std::int64_t rounded(double bytes_per_step) { return static_cast<std::int64_t>(std::llround(bytes_per_step)); }

}  // namespace

std::string LeakVerdict::describe() const {
  if (!leak) return "ok: no steady growth at step boundaries";
  std::string text = "leak at step " + std::to_string(step) + ": " +
                     format_size_delta(bytes_per_step) + "/step in tag " + memory::tag_name(tag);
  if (!site.empty()) text += " at site '" + site + "' (" + format_size_delta(site_bytes_per_step) + "/step)";
  if (predicted_oom_step >= 0) text += "; budget reached at step " + std::to_string(predicted_oom_step);
  return text;
}

LeakDetector::LeakDetector(memory::CachingAllocator& allocator, GrowthCriteria criteria)
    : allocator_(allocator), criteria_(criteria) {
  fit_growth({}, {}, criteria_);  // validates the criteria now, not at the first sample
  read_up_to_ = next_trace_sequence();
}

std::uint64_t LeakDetector::next_trace_sequence() const {
  const memory::Trace& trace = allocator_.trace();
  return trace.dropped() + trace.events().size();
}

std::size_t LeakDetector::open_site(std::string label) {
  spans_.push_back(SiteSpan{next_site_id_, std::move(label), next_trace_sequence()});
  return next_site_id_++;
}

void LeakDetector::close_site(std::size_t id) {
  for (SiteSpan& span : spans_) {
    if (span.id == id) span.end = next_trace_sequence();
  }
}

// Reads the trace events since the last sample: the interval's peak and the site blocks.
void LeakDetector::read_trace(LeakSample& sample) {
  const memory::Trace& trace = allocator_.trace();
  const std::uint64_t first_kept = trace.dropped();
  const std::uint64_t end = next_trace_sequence();
  if (read_up_to_ < first_kept) sites_complete_ = false;  // events we never saw: blocks unknown
  sample.peak_allocated = sample.allocated;
  sample.peak_reserved = sample.reserved;
  for (std::uint64_t seq = std::max(read_up_to_, first_kept); seq < end; ++seq) {
    const memory::TraceEvent& event = trace.events()[seq - first_kept];
    sample.peak_allocated = std::max(sample.peak_allocated, event.allocated_after);
    sample.peak_reserved = std::max(sample.peak_reserved, event.reserved_after);
    const auto key = std::make_pair(event.segment, event.offset);
    if (event.kind == memory::EventKind::free) {
      auto it = site_blocks_.find(key);
      if (it != site_blocks_.end()) {
        site_live_[it->second.label] -= static_cast<std::int64_t>(it->second.bytes);
        site_blocks_.erase(it);
      }
    } else if (event.kind == memory::EventKind::alloc) {
      // The innermost site that spans this event: the latest opened one containing it.
      for (auto span = spans_.rbegin(); span != spans_.rend(); ++span) {
        if (span->begin <= seq && seq < span->end) {
          site_blocks_[key] = SiteBlock{span->label, event.bytes};
          site_live_[span->label] += static_cast<std::int64_t>(event.bytes);
          break;
        }
      }
    }
  }
  read_up_to_ = end;
  spans_.erase(std::remove_if(spans_.begin(), spans_.end(),
                              [&](const SiteSpan& span) { return span.end <= read_up_to_; }),
               spans_.end());
}

const LeakVerdict& LeakDetector::sample(std::int64_t step) {
  if (!samples_.empty() && step < samples_.back().step) {
    throw std::invalid_argument("LeakDetector::sample: step " + std::to_string(step) + " after step " +
                                std::to_string(samples_.back().step));
  }
  const memory::MemoryStats stats = allocator_.stats();
  LeakSample sample;
  sample.step = step;
  sample.allocated = stats.allocated.current;
  sample.reserved = stats.reserved.current;
  for (memory::Tag tag : memory::all_tags()) {
    sample.tag_allocated[static_cast<int>(tag)] = stats.tag(tag).current;
  }
  read_trace(sample);
  // A site seen for the first time was at 0 bytes at every earlier sample.
  for (const auto& [label, live] : site_live_) {
    auto& series = site_bytes_[label];
    series.resize(samples_.size(), 0);
    series.push_back(live);
  }
  samples_.push_back(sample);
  refit();
  return verdict_;
}

void LeakDetector::refit() {
  std::vector<std::int64_t> steps, bytes;
  for (const LeakSample& s : samples_) {
    steps.push_back(s.step);
    bytes.push_back(s.allocated);
  }
  LeakVerdict verdict;
  verdict.step = samples_.back().step;
  verdict.fit = fit_growth(steps, bytes, criteria_);
  verdict.leak = verdict.fit.steady;
  verdict.bytes_per_step = rounded(verdict.fit.bytes_per_step);
  if (!verdict.leak) {
    verdict_ = verdict;
    return;
  }

  // Which tags grow: each tag's own series through the same fit, fastest first.
  std::vector<std::pair<double, memory::Tag>> growing;
  for (memory::Tag tag : memory::all_tags()) {
    std::vector<std::int64_t> tag_bytes;
    for (const LeakSample& s : samples_) tag_bytes.push_back(s.tag_allocated[static_cast<int>(tag)]);
    const GrowthFit fit = fit_growth(steps, tag_bytes, criteria_);
    if (fit.steady) growing.emplace_back(fit.bytes_per_step, tag);
  }
  std::stable_sort(growing.begin(), growing.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [rate, tag] : growing) verdict.growing_tags.push_back(tag);
  if (!growing.empty()) {
    verdict.tag = growing.front().second;
    verdict.tag_bytes_per_step = rounded(growing.front().first);
  }

  // Which site grows fastest.
  double best_site_rate = 0;
  for (const auto& [label, series] : site_bytes_) {
    const GrowthFit fit = fit_growth(steps, series, criteria_);
    if (fit.steady && fit.bytes_per_step > best_site_rate) {
      best_site_rate = fit.bytes_per_step;
      verdict.site = label;
    }
  }
  verdict.site_bytes_per_step = rounded(best_site_rate);

  // When the budget is reached: the latest step's allocated and reserved peaks, each growing
  // at its own rate, projected to the first step where either passes the budget.
  std::vector<std::int64_t> reserved;
  for (const LeakSample& s : samples_) reserved.push_back(s.reserved);
  verdict.reserved_bytes_per_step =
      std::max<std::int64_t>(0, rounded(fit_growth(steps, reserved, criteria_).bytes_per_step));
  const memory::AllocatorConfig& config = allocator_.config();
  if (config.budget != memory::AllocatorConfig::kUnlimited && verdict.bytes_per_step > 0) {
    const double available = static_cast<double>(config.budget) - static_cast<double>(config.simulated_external);
    auto steps_until_past = [&](std::int64_t peak, std::int64_t rate) {
      if (rate <= 0) return std::numeric_limits<double>::infinity();
      return std::max(0.0, std::floor((available - static_cast<double>(peak)) / static_cast<double>(rate)));
    };
    const LeakSample& latest = samples_.back();
    const double steps_left = std::min(steps_until_past(latest.peak_allocated, verdict.bytes_per_step),
                                       steps_until_past(latest.peak_reserved, verdict.reserved_bytes_per_step));
    verdict.predicted_oom_step = verdict.step + static_cast<std::int64_t>(steps_left) + 1;
  }
  verdict_ = verdict;
  if (!first_detection_) first_detection_ = verdict_;
}

std::optional<LeakVerdict> LeakDetector::growth_under_way() const {
  constexpr std::size_t kMinBoundaries = 3;  // two rises in a row: more than one odd step
  if (samples_.size() < kMinBoundaries) return std::nullopt;
  for (std::size_t i = 1; i < samples_.size(); ++i) {
    if (samples_[i].allocated <= samples_[i - 1].allocated) return std::nullopt;
  }
  const LeakSample& first = samples_.front();
  const LeakSample& last = samples_.back();
  const double steps = static_cast<double>(std::max<std::int64_t>(1, last.step - first.step));
  LeakVerdict evidence;
  evidence.step = last.step;
  evidence.bytes_per_step = rounded(static_cast<double>(last.allocated - first.allocated) / steps);
  std::int64_t best_tag_rise = -1;
  for (memory::Tag tag : memory::all_tags()) {
    const auto t = static_cast<int>(tag);
    const std::int64_t rise = last.tag_allocated[t] - first.tag_allocated[t];
    if (rise > best_tag_rise) {
      best_tag_rise = rise;
      evidence.tag = tag;
    }
  }
  std::int64_t best_site_rise = 0;
  for (const auto& [label, series] : site_bytes_) {
    const std::int64_t rise = series.back() - series.front();
    if (rise > best_site_rise) {
      best_site_rise = rise;
      evidence.site = label;
      evidence.site_bytes_per_step = rounded(static_cast<double>(rise) / steps);
    }
  }
  return evidence;
}

memory::OomInfo LeakDetector::explain(const memory::OomInfo& info) const {
  const LeakVerdict* leak = verdict_.leak ? &verdict_ : (first_detection_ ? &*first_detection_ : nullptr);
  std::optional<LeakVerdict> early;
  if (leak == nullptr) {
    early = growth_under_way();
    if (!early) return info;
    leak = &*early;
  }
  memory::OomInfo explained = info;
  explained.diagnosis = memory::Diagnosis::leak;
  memory::diagnose(explained);
  const std::string evidence =
      early ? " so far (" + std::to_string(samples_.size()) + " step boundaries, each above the last: "
                  "not yet confirmed by the detector's window)"
            : "";
  explained.remedy = "memory grew " + format_size_delta(leak->bytes_per_step) + " every step" + evidence +
                     " in tag " + memory::tag_name(leak->tag) +
                     (leak->site.empty() ? std::string() : " at '" + leak->site + "'") +
                     ": the program keeps device tensors across steps. Drop the references once "
                     "used, keep host scalars (.item()) for statistics, or move what must outlive "
                     "the step off the device and out of the graph (.detach().cpu())";
  return explained;
}

void LeakDetector::rethrow(const memory::OomError& error) const {
  throw memory::OomError(explain(error.info()));
}

LeakSite::LeakSite(LeakDetector& detector, std::string label)
    : detector_(detector), id_(detector.open_site(std::move(label))) {}

LeakSite::~LeakSite() { detector_.close_site(id_); }

}  // namespace oomlab::leak
