// Rows only two replays have (oomlab replay --out): the largest allocation sites by name, the
// iterations found, the leak or the growth released later, each what-if setting's fit, and the
// fidelity. They read the record's metrics (harness/replay/replay_record.hpp names them).
#include <algorithm>
#include <cmath>
#include <map>

#include "harness/memory/size.hpp"
#include "harness/report/comparison_rows.hpp"
#include "harness/report/number_format.hpp"

namespace oomlab::report::detail {

namespace {

constexpr const char* kTopSitePrefix = "top_site.";  // replay_record.hpp's kTopSitePrefix
constexpr const char* kWhatIfPrefix = "what_if.";
constexpr const char* kFitsSuffix = ".fits";

std::optional<double> metric(const RunRecord& r, const std::string& name) {
  const auto it = r.metrics.find(name);
  if (it == r.metrics.end()) return std::nullopt;
  return it->second;
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The site holding the most bytes at the peak: "" when the record names none.
std::string largest_site(const RunRecord& r) {
  std::string site;
  double most = -1;
  for (const auto& [name, bytes] : r.metrics) {
    if (starts_with(name, kTopSitePrefix) && bytes > most) {
      most = bytes;
      site = name.substr(std::char_traits<char>::length(kTopSitePrefix));
    }
  }
  return site;
}

std::string bytes_text(double bytes) { return format_size(metric_byte_count(bytes)); }

// "+1.00MiB" between two metrics, which are input: a difference past int64 is clamped, not UB.
std::string delta_text(double a, double b) {
  constexpr double kMost = 9.2e18;
  const double delta = std::clamp(b - a, -kMost, kMost);
  return format_size_delta(std::isfinite(delta) ? static_cast<std::int64_t>(delta) : 0);
}

class ReplayRows {
 public:
  ReplayRows(const RunRecord& a, const RunRecord& b, const std::string& item, const std::string& setting,
             double threshold, Comparison& comparison)
      : a_(a), b_(b), item_(item), setting_(setting), threshold_(threshold), comparison_(comparison) {}

  // Live bytes at the peak of the largest site of each side, by its name: the line the user changed.
  void top_sites() {
    const std::string site_a = largest_site(a_), site_b = largest_site(b_);
    if (!site_a.empty()) site_row(site_a);
    if (!site_b.empty() && site_b != site_a) site_row(site_b);
  }

  void iterations() {
    const std::optional<double> a = metric(a_, "iterations"), b = metric(b_, "iterations");
    if (!a && !b) return;
    ComparisonRow row = start("iterations", "");
    const auto text = [](std::optional<double> n) { return n ? format_number(*n) : std::string("none found"); };
    row.a = a;
    row.b = b;
    row.a_text = text(a);
    row.b_text = text(b);
    row.verdict = a == b ? Verdict::same : Verdict::changed;  // a different program, not a better one
    add(std::move(row));
  }

  // A leak's growth per iteration: lower is better, none (0) best. Growth released later (a KV
  // cache) is no leak: shown beside it, neither better nor worse.
  void leak() {
    const std::optional<double> a = metric(a_, "leak_bytes_per_iteration"), b = metric(b_, "leak_bytes_per_iteration");
    if (a || b) {
      ComparisonRow row = start("leak per iteration", "bytes");
      row.a = a.value_or(0);
      row.b = b.value_or(0);
      row.a_text = a ? bytes_text(*a) : "no leak";
      row.b_text = b ? bytes_text(*b) : "no leak";
      row.delta_text = delta_text(*row.a, *row.b);
      if (*row.a > 0) row.ratio = *row.b / *row.a;
      row.verdict = judge(*row.a, *row.b, Better::lower, threshold_, -1, -1);
      add(std::move(row));
    }
    const std::string released = "released_growth_bytes_per_iteration";
    const std::optional<double> ra = metric(a_, released), rb = metric(b_, released);
    if (ra || rb) {
      ComparisonRow row = start("growth released later", "bytes");
      row.a_text = ra ? bytes_text(*ra) + " per iteration" : "none";
      row.b_text = rb ? bytes_text(*rb) + " per iteration" : "none";
      row.verdict = row.a_text == row.b_text ? Verdict::same : Verdict::changed;
      add(std::move(row));
    }
  }

  // Each what-if setting both records tried (replay --what-if): fitting where it failed is better.
  void what_if_fits() {
    for (const auto& [name, fits_a] : a_.metrics) {
      if (!starts_with(name, kWhatIfPrefix) || !ends_with(name, kFitsSuffix)) continue;
      const std::optional<double> fits_b = metric(b_, name);
      if (!fits_b) continue;
      const std::size_t from = std::char_traits<char>::length(kWhatIfPrefix);
      const std::string setting = name.substr(from, name.size() - from - std::char_traits<char>::length(kFitsSuffix));
      ComparisonRow row = start("what-if " + setting + " fits", "");
      row.a_text = fits_a > 0 ? "yes" : "no";
      row.b_text = *fits_b > 0 ? "yes" : "no";
      row.verdict = row.a_text == row.b_text ? Verdict::same : (*fits_b > 0 ? Verdict::better : Verdict::worse);
      add(std::move(row));
    }
  }

  // Decisions that differ from PyTorch's: a replay that stops reproducing its run is worse.
  void fidelity() {
    const std::optional<double> a = metric(a_, "divergent_events"), b = metric(b_, "divergent_events");
    if (!a || !b) return;
    ComparisonRow row = start("divergent events", "");
    row.a = a;
    row.b = b;
    row.a_text = format_number(*a);
    row.b_text = format_number(*b);
    row.verdict = *a == *b ? Verdict::same : (*b < *a ? Verdict::better : Verdict::worse);
    add(std::move(row));
  }

 private:
  void site_row(const std::string& site) {
    const std::optional<double> a = metric(a_, kTopSitePrefix + site), b = metric(b_, kTopSitePrefix + site);
    ComparisonRow row = start("site " + site, "bytes");
    row.a_text = a ? bytes_text(*a) : "not among the largest";
    row.b_text = b ? bytes_text(*b) : "not among the largest";
    if (a && b) {
      row.a = a;
      row.b = b;
      row.delta_text = delta_text(*a, *b);
      if (*a > 0) row.ratio = *b / *a;
      row.verdict = judge(*a, *b, Better::lower, threshold_, -1, -1);
    } else {
      row.verdict = Verdict::changed;  // below the other's smallest listed site, by how much unknown
    }
    add(std::move(row));
  }

  ComparisonRow start(const std::string& metric, const std::string& unit) const {
    return start_row(item_, setting_, metric, unit);
  }
  void add(ComparisonRow row) { comparison_.rows.push_back(std::move(row)); }

  const RunRecord& a_;
  const RunRecord& b_;
  const std::string& item_;
  const std::string& setting_;
  double threshold_;
  Comparison& comparison_;
};

}  // namespace

void add_replay_rows(const RunRecord& a, const RunRecord& b, const std::string& item, const std::string& setting,
                     double threshold, Comparison& comparison) {
  ReplayRows rows(a, b, item, setting, threshold, comparison);
  rows.top_sites();
  rows.iterations();
  rows.leak();
  rows.what_if_fits();
  rows.fidelity();
}

}  // namespace oomlab::report::detail
