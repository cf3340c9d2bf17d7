#include "harness/report/bar_chart.hpp"

#include <algorithm>

#include "harness/report/chart_parts.hpp"

namespace oomlab::report {

namespace {

constexpr double kWidth = 800;
constexpr double kBar = 13, kBarGap = 2, kGroupGap = 12;
constexpr double kLabelFont = 11.5, kValueFont = 10.5;

}  // namespace

std::string bar_svg(const BarChart& chart) {
  double max = 0, label_width = 0, value_width = 0;
  for (const BarGroup& group : chart.groups) {
    label_width = std::max(label_width, Svg::text_width(group.label, kLabelFont));
    for (std::size_t s = 0; s < group.values.size(); ++s) {
      const double error = s < group.errors.size() && group.errors[s] > 0 ? group.errors[s] : 0;
      max = std::max(max, group.values[s] * (1 + error));
      if (s < group.texts.size()) value_width = std::max(value_width, Svg::text_width(group.texts[s], kValueFont));
    }
  }
  if (chart.reference > 0) max = std::max(max, chart.reference);
  if (!(max > 0)) max = 1;
  std::string unit;
  const std::vector<Tick> ticks = chart.bytes ? byte_ticks(max, unit) : number_ticks(max);
  const double scale_max = std::max(max, ticks.back().value);

  std::vector<LegendEntry> legend;
  for (const BarSeries& series : chart.series) legend.push_back({series.name, series.colour});
  if (chart.reference > 0) legend.push_back({chart.reference_label, kBudgetColour, LegendEntry::Mark::dashed_line});

  const double group_height = static_cast<double>(chart.series.size()) * (kBar + kBarGap) - kBarGap;
  const double left = 16 + label_width + 10;
  PlotArea area;
  area.left = left;
  area.width = kWidth - left - value_width - 24;  // room for the value after the longest bar
  // Title, then the legend above the bars (never over them), then the bars.
  Svg measure(kWidth, 100);
  const double legend_bottom = draw_legend_row(measure, 16, 42, kWidth - 16, legend);
  area.top = legend_bottom + 2;
  area.height = static_cast<double>(chart.groups.size()) * (group_height + kGroupGap) + kGroupGap / 2;
  Svg svg(kWidth, area.bottom() + 44);
  svg.text(16, 20, chart.title, {14, Svg::Anchor::start, true});
  draw_legend_row(svg, 16, 42, kWidth - 16, legend);
  draw_x_axis(svg, area, ticks, scale_max, chart.bytes ? chart.axis_title + " (" + unit + ")" : chart.axis_title);
  const auto px = [&](double value) { return area.left + value / scale_max * area.width; };

  if (chart.reference > 0) {  // under the bars' value labels
    const double x = px(chart.reference);
    svg.line(x, area.top, x, area.bottom(), Svg::stroked(kBudgetColour, 1.6, "6,4"));
  }
  double y = area.top + kGroupGap / 2;
  for (const BarGroup& group : chart.groups) {
    svg.text(left - 8, y + group_height / 2 + 4, group.label, {kLabelFont, Svg::Anchor::end});
    for (std::size_t s = 0; s < chart.series.size() && s < group.values.size(); ++s) {
      const double by = y + static_cast<double>(s) * (kBar + kBarGap);
      if (group.values[s] < 0) continue;
      const double end = px(group.values[s]);
      svg.rect(area.left, by, std::max(end - area.left, 0.5), kBar, Svg::filled(chart.series[s].colour));
      double text_x = end + 4;
      if (s < group.errors.size() && group.errors[s] > 0) {
        const double low = px(group.values[s] * (1 - group.errors[s]));
        const double high = px(group.values[s] * (1 + group.errors[s]));
        svg.line(low, by + kBar / 2, high, by + kBar / 2, Svg::stroked("#222", 1.2));
        svg.line(high, by + 2, high, by + kBar - 2, Svg::stroked("#222", 1.2));
        svg.line(low, by + 2, low, by + kBar - 2, Svg::stroked("#222", 1.2));
        text_x = high + 4;
      }
      if (s < group.texts.size() && !group.texts[s].empty()) {
        // On a white box: the budget line may run through the value.
        svg.rect(text_x - 1, by, Svg::text_width(group.texts[s], kValueFont) + 2, kBar, Svg::filled("white", 0.85));
        svg.text(text_x, by + kBar - 2.5, group.texts[s], {kValueFont});
      }
    }
    y += group_height + kGroupGap;
  }
  return svg.str();
}

}  // namespace oomlab::report
