// The leak detector: samples the allocator at every step boundary (total, per tag, per leak
// site), fits bytes/step over a sliding window (growth_fit.hpp) and turns steady growth into a
// verdict: `leak`, with bytes/step, the growing tag and site, and the step at which the budget
// will be reached. Flat runs stay `ok`.
//
// Use: make one per run, call sample(step) after each step's temporaries are gone (right after
// RunContext::end_step()), wrap code that keeps memory across steps in a LeakSite, and route an
// OomError through rethrow() so an OOM after a detected leak carries Diagnosis::leak.
//
// Sites are found through the allocator's trace: a LeakSite notes the range of trace sequence
// numbers it spans, and sample() reads the new alloc/free events, so each live block made inside
// a site is counted against its label until it is freed. No allocator hook is needed. If the
// trace drops events before they are read (trace_capacity too small for one step), site
// attribution stops (sites_complete() is false); the total and per-tag fits are unaffected.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/leak/growth_fit.hpp"
#include "harness/memory/caching_allocator.hpp"
#include "harness/memory/oom_error.hpp"
#include "harness/memory/tags.hpp"

namespace oomlab::leak {

// One step boundary.
struct LeakSample {
  std::int64_t step = 0;
  std::int64_t allocated = 0;       // allocated bytes at the boundary
  std::int64_t peak_allocated = 0;  // highest allocated bytes since the previous sample
  std::int64_t reserved = 0;        // reserved bytes at the boundary
  std::int64_t peak_reserved = 0;   // highest reserved bytes since the previous sample
  std::array<std::int64_t, memory::kTagCount> tag_allocated{};
};

struct LeakVerdict {
  bool leak = false;
  std::int64_t step = -1;              // the sample this verdict was made at
  std::int64_t bytes_per_step = 0;     // total allocated bytes/step (rounded fit)
  memory::Tag tag = memory::Tag::other;  // the tag growing fastest
  std::int64_t tag_bytes_per_step = 0;
  std::vector<memory::Tag> growing_tags;  // every tag with steady growth, fastest first
  std::string site;                    // the fastest-growing LeakSite label; empty if none grows
  std::int64_t site_bytes_per_step = 0;
  std::int64_t reserved_bytes_per_step = 0;  // reserved grows faster when the leak fragments
  // The first step whose peak is projected past the budget (allocated and reserved peaks each
  // grow at their own rate); -1 without a leak or a budget.
  std::int64_t predicted_oom_step = -1;
  GrowthFit fit;                       // the total's fit, for reports
  std::string describe() const;        // one line: "leak: +288.00MiB/step in retained (site ...)"
};

class LeakDetector {
 public:
  explicit LeakDetector(memory::CachingAllocator& allocator, GrowthCriteria criteria = {});
  LeakDetector(const LeakDetector&) = delete;
  LeakDetector& operator=(const LeakDetector&) = delete;

  // Records the boundary after `step` and refits. Steps must not decrease.
  const LeakVerdict& sample(std::int64_t step);

  const LeakVerdict& verdict() const { return verdict_; }
  // The verdict at the first sample that found a leak (the early warning), if any.
  const std::optional<LeakVerdict>& first_detection() const { return first_detection_; }
  const std::vector<LeakSample>& samples() const { return samples_; }
  // Live bytes per site label at each sample (aligned with samples()).
  const std::map<std::string, std::vector<std::int64_t>>& site_bytes() const { return site_bytes_; }
  bool sites_complete() const { return sites_complete_; }

  // The OOM's numbers with Diagnosis::leak and a remedy naming the tag and site, when a leak
  // has been detected, or, before the fit's window is full, when growth is under way (every
  // step boundary so far, at least 3, above the one before: the evidence is given as such);
  // otherwise `info` unchanged.
  memory::OomInfo explain(const memory::OomInfo& info) const;
  // Throws OomError(explain(error.info())).
  [[noreturn]] void rethrow(const memory::OomError& error) const;

 private:
  friend class LeakSite;
  std::size_t open_site(std::string label);
  void close_site(std::size_t id);
  std::uint64_t next_trace_sequence() const;
  void read_trace(LeakSample& sample);
  void refit();
  std::optional<LeakVerdict> growth_under_way() const;

  struct SiteSpan {
    std::size_t id = 0;
    std::string label;
    std::uint64_t begin = 0;  // first trace sequence inside the site
    std::uint64_t end = UINT64_MAX;  // one past the last; UINT64_MAX while open
  };
  struct SiteBlock {
    std::string label;
    std::size_t bytes = 0;
  };

  memory::CachingAllocator& allocator_;
  GrowthCriteria criteria_;
  std::vector<LeakSample> samples_;
  std::map<std::string, std::vector<std::int64_t>> site_bytes_;
  std::map<std::string, std::int64_t> site_live_;
  std::vector<SiteSpan> spans_;              // not yet fully read from the trace
  std::map<std::pair<std::uint32_t, std::size_t>, SiteBlock> site_blocks_;  // (segment, offset)
  std::size_t next_site_id_ = 0;
  std::uint64_t read_up_to_ = 0;             // next trace sequence to read
  bool sites_complete_ = true;
  LeakVerdict verdict_;
  std::optional<LeakVerdict> first_detection_;
};

// Labels the allocations made during its lifetime as one allocation site, e.g.
// `LeakSite site(detector, "epoch_stats.append(real_features)")`. Sites nest (the innermost
// names the block).
class LeakSite {
 public:
  LeakSite(LeakDetector& detector, std::string label);
  ~LeakSite();
  LeakSite(const LeakSite&) = delete;
  LeakSite& operator=(const LeakSite&) = delete;

 private:
  LeakDetector& detector_;
  std::size_t id_;
};

}  // namespace oomlab::leak
