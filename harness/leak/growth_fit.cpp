// Robust growth fit: floor minima, Theil-Sen slopes and the steadiness tests.
#include "harness/leak/growth_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace oomlab::leak {
namespace {

// The middle value (mean of the two middle ones for an even count); 0 for none.
double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return lower + (upper - lower) / 2;  // exact when both halves agree
}

// The most significant lag-p difference median, p = 1..max_lag, as a robust z: the median of
// (y[k] - y[k-p]) / (x[k] - x[k-p]) over its standard error 1.4826 MAD / sqrt(count).
// Infinite when the differences are exactly constant and positive (an exact leak or sawtooth).
double lag_difference_significance(const std::vector<double>& x, const std::vector<double>& y,
                                   std::size_t max_lag) {
  double best = 0;
  for (std::size_t lag = 1; lag <= max_lag && lag < x.size(); ++lag) {
    std::vector<double> rates;
    for (std::size_t k = lag; k < x.size(); ++k) {
      if (x[k] != x[k - lag]) rates.push_back((y[k] - y[k - lag]) / (x[k] - x[k - lag]));
    }
    if (rates.empty()) continue;
    const double centre = median(rates);
    if (centre <= 0) continue;
    std::vector<double> deviations;
    for (double r : rates) deviations.push_back(std::abs(r - centre));
    const double spread = 1.4826 * median(deviations);
    if (spread == 0) return std::numeric_limits<double>::infinity();
    best = std::max(best, centre / (spread / std::sqrt(static_cast<double>(rates.size()))));
  }
  return best;
}

void check_criteria(const GrowthCriteria& c) {
  if (c.window < 2 || c.floor_span < 1 || c.min_floor_points < 3 ||
      c.window - c.floor_span + 1 < c.min_floor_points) {
    throw std::invalid_argument(
        "GrowthCriteria: need window >= 2, floor_span >= 1, min_floor_points >= 3 and "
        "window - floor_span + 1 >= min_floor_points (window " + std::to_string(c.window) +
        ", floor_span " + std::to_string(c.floor_span) + ", min_floor_points " +
        std::to_string(c.min_floor_points) + ")");
  }
  if (!(c.min_bytes_per_step > 0) || !(c.min_significance >= 0) || !(c.max_jump_fraction > 0) ||
      c.confirm_samples < 1) {
    throw std::invalid_argument(
        "GrowthCriteria: need min_bytes_per_step > 0, min_significance >= 0, "
        "max_jump_fraction > 0 and confirm_samples >= 1");
  }
}

}  // namespace

double theil_sen_slope(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw std::invalid_argument("theil_sen_slope: x and y differ in length");
  std::vector<double> slopes;
  slopes.reserve(x.size() * (x.size() > 0 ? x.size() - 1 : 0) / 2);
  for (std::size_t i = 0; i < x.size(); ++i) {
    for (std::size_t j = i + 1; j < x.size(); ++j) {
      if (x[j] != x[i]) slopes.push_back((y[j] - y[i]) / (x[j] - x[i]));
    }
  }
  return median(std::move(slopes));
}

namespace {

// The fit of the window that ends just before sample `end`.
GrowthFit fit_window(const std::vector<std::int64_t>& steps, const std::vector<std::int64_t>& bytes,
                     std::size_t end, const GrowthCriteria& criteria) {
  GrowthFit fit;
  const std::size_t n = std::min(end, static_cast<std::size_t>(criteria.window));
  const std::size_t first = end - n;
  const std::size_t span = static_cast<std::size_t>(criteria.floor_span);
  if (n < span || n - span + 1 < static_cast<std::size_t>(criteria.min_floor_points)) return fit;
  fit.enough_samples = true;

  // 1. The floor: what stays allocated over every floor_span consecutive boundaries.
  std::vector<double> x, floor;
  for (std::size_t i = first; i + span <= end; ++i) {
    x.push_back(static_cast<double>(steps[i]));
    floor.push_back(static_cast<double>(*std::min_element(bytes.begin() + i, bytes.begin() + i + span)));
  }
  const std::size_t m = floor.size();

  // 2. Slopes of the whole floor and of its recent half.
  fit.slope_whole = theil_sen_slope(x, floor);
  const std::size_t recent = std::max<std::size_t>(3, (m + 1) / 2);
  const std::vector<double> x_recent(x.end() - recent, x.end());
  const std::vector<double> floor_recent(floor.end() - recent, floor.end());
  fit.slope_recent = theil_sen_slope(x_recent, floor_recent);

  // 3. The steadiness tests, the significance on the raw samples of the window.
  const std::vector<double> x_raw(steps.begin() + first, steps.begin() + end);
  const std::vector<double> y_raw(bytes.begin() + first, bytes.begin() + end);
  fit.significance = lag_difference_significance(x_raw, y_raw, span);
  const double floor_rise = floor.back() - floor.front();
  double largest_jump = 0;
  for (std::size_t i = 1; i < m; ++i) largest_jump = std::max(largest_jump, floor[i] - floor[i - 1]);
  fit.largest_jump_fraction = floor_rise > 0 ? largest_jump / floor_rise : 1.0;

  fit.steady = fit.slope_whole >= criteria.min_bytes_per_step &&
               fit.slope_recent >= 0.5 * fit.slope_whole &&
               fit.significance >= criteria.min_significance &&
               fit.largest_jump_fraction <= criteria.max_jump_fraction;
  fit.bytes_per_step = fit.steady ? fit.slope_recent : fit.slope_whole;
  return fit;
}

}  // namespace

GrowthFit fit_growth(const std::vector<std::int64_t>& steps, const std::vector<std::int64_t>& bytes,
                     const GrowthCriteria& criteria) {
  check_criteria(criteria);
  if (steps.size() != bytes.size()) {
    throw std::invalid_argument("fit_growth: " + std::to_string(steps.size()) + " steps but " +
                                std::to_string(bytes.size()) + " byte counts");
  }
  if (!std::is_sorted(steps.begin(), steps.end())) {
    throw std::invalid_argument("fit_growth: steps must not decrease");
  }
  GrowthFit latest = fit_window(steps, bytes, steps.size(), criteria);
  for (int back = 1; back < criteria.confirm_samples && latest.steady; ++back) {
    const std::size_t back_n = static_cast<std::size_t>(back);
    const GrowthFit earlier = back_n < steps.size() ? fit_window(steps, bytes, steps.size() - back_n, criteria)
                                                    : GrowthFit{};
    if (!earlier.steady) {
      latest.steady = false;
      latest.bytes_per_step = latest.slope_whole;
    }
  }
  return latest;
}

}  // namespace oomlab::leak
