#include "harness/extrapolate/size_fit.hpp"

#include <algorithm>
#include <numeric>

#include "harness/replay/trace_bytes.hpp"

namespace oomlab::extrapolate {
namespace {

using Wide = __int128;

Wide evaluate(const SizeFit& fit, std::int64_t k) {
  const Wide x = k;
  return Wide{fit.a} + Wide{fit.b} * x + Wide{fit.c} * x * x;
}

bool fits_in_int64(Wide v) { return v >= INT64_MIN && v <= INT64_MAX; }

// The polynomial of `degree` through the first degree + 1 points, with integer coefficients.
std::optional<SizeFit> interpolate(const std::vector<std::int64_t>& x, const std::vector<Wide>& y, int degree) {
  SizeFit fit;
  fit.degree = degree;
  if (degree == 0) {
    fit.a = static_cast<std::int64_t>(y[0]);
    return fit;
  }
  const Wide d01 = y[1] - y[0], dx01 = Wide{x[1]} - x[0];
  if (d01 % dx01 != 0) return std::nullopt;
  const Wide slope01 = d01 / dx01;
  Wide c = 0;
  if (degree == 2) {
    const Wide d12 = y[2] - y[1], dx12 = Wide{x[2]} - x[1];
    if (d12 % dx12 != 0) return std::nullopt;
    const Wide second = d12 / dx12 - slope01, dx02 = Wide{x[2]} - x[0];
    if (second % dx02 != 0) return std::nullopt;
    c = second / dx02;
  }
  const Wide b = slope01 - c * (Wide{x[0]} + x[1]);
  const Wide a = y[0] - b * x[0] - c * Wide{x[0]} * x[0];
  if (!fits_in_int64(a) || !fits_in_int64(b) || !fits_in_int64(c)) return std::nullopt;
  fit.a = static_cast<std::int64_t>(a);
  fit.b = static_cast<std::int64_t>(b);
  fit.c = static_cast<std::int64_t>(c);
  if (fit.c == 0) fit.degree = fit.b == 0 ? 0 : 1;
  return fit;
}

std::optional<SizeFit> fit_degree(const std::vector<std::int64_t>& x, const std::vector<Wide>& y, int degree) {
  std::optional<SizeFit> fit = interpolate(x, y, degree);
  if (!fit) return std::nullopt;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (evaluate(*fit, x[i]) != y[i]) return std::nullopt;
  }
  fit->checked = x.size() > static_cast<std::size_t>(degree) + 1;
  return fit;
}

std::string term(std::int64_t coefficient, const std::string& unit, bool first) {
  if (coefficient == 0) return "";
  std::string text = first ? (coefficient < 0 ? "-" : "") : (coefficient < 0 ? " - " : " + ");
  const std::uint64_t magnitude =
      coefficient < 0 ? 0 - static_cast<std::uint64_t>(coefficient) : static_cast<std::uint64_t>(coefficient);
  text += std::to_string(magnitude);
  return text + unit;
}

}  // namespace

std::string SizeFit::formula(const std::string& knob) const {
  std::string text = term(a, "", true);
  text += term(b, "*" + knob, text.empty());
  text += term(c, "*" + knob + "^2", text.empty());
  return text.empty() ? "0" : text;
}

std::optional<SizeFit> fit_size(const std::vector<std::int64_t>& knob, const std::vector<std::uint64_t>& sizes,
                                FitMode mode) {
  // Sorted by knob: the divided differences then read left to right.
  std::vector<std::size_t> order(knob.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return knob[i] < knob[j]; });
  std::vector<std::int64_t> x;
  std::vector<Wide> y;
  for (std::size_t i : order) {
    x.push_back(knob[i]);
    y.push_back(Wide{sizes[i]});
  }
  if (x.size() < 2) return std::nullopt;
  if (mode != FitMode::quadratic) {
    if (auto affine = fit_degree(x, y, 1)) return affine;
    if (mode == FitMode::affine) return std::nullopt;
  }
  if (x.size() < 3) return std::nullopt;
  std::optional<SizeFit> quadratic = fit_degree(x, y, 2);
  // Three sizes meet some quadratic more often than chance suggests (a library's workspaces are
  // multiples of large units); a tensor's, a product of extents that grow with the knob, has no
  // negative term beside its square: a fit with one is such a coincidence (cuDNN's 4.5 KiB,
  // 4.5 KiB, 10 MiB at batch 1, 2, 4 in ResNet-50), no formula.
  if (quadratic && (quadratic->c < 0 || quadratic->b < 0)) return std::nullopt;
  return quadratic;
}

std::optional<std::uint64_t> size_at(const SizeFit& fit, std::int64_t k) {
  const Wide size = evaluate(fit, k);
  if (size < 1 || size > Wide{replay::kMostDeviceBytes}) return std::nullopt;
  return static_cast<std::uint64_t>(size);
}

}  // namespace oomlab::extrapolate
