#include "harness/report/chart_parts.hpp"

namespace oomlab::report {

namespace {

constexpr double kTickFont = 11;
constexpr double kLegendFont = 11;
constexpr double kLegendRow = 17;

void draw_mark(Svg& svg, double x, double y, const LegendEntry& entry) {
  switch (entry.mark) {
    case LegendEntry::Mark::box: svg.rect(x, y - 9, 12, 10, Svg::outlined(entry.colour, "#555", 0.5)); break;
    case LegendEntry::Mark::dashed_line:
      svg.line(x, y - 4, x + 14, y - 4, Svg::stroked(entry.colour, 1.6, "4,3"));
      break;
    case LegendEntry::Mark::line: svg.line(x, y - 4, x + 14, y - 4, Svg::stroked(entry.colour, 2)); break;
  }
}

}  // namespace

void draw_y_axis(Svg& svg, const PlotArea& area, const std::vector<Tick>& ticks, double max, const std::string& title) {
  for (const Tick& tick : ticks) {
    if (tick.value > max * 1.0001) break;
    const double y = area.bottom() - tick.value / max * area.height;
    svg.line(area.left, y, area.right(), y, Svg::stroked(kGridColour, 1));
    svg.text(area.left - 6, y + 4, tick.label, {kTickFont, Svg::Anchor::end});
  }
  svg.line(area.left, area.top, area.left, area.bottom(), Svg::stroked("#444", 1));
  svg.text(area.left - 54, area.top + area.height / 2, title, {kTickFont, Svg::Anchor::middle, false, "#222", -90});
}

void draw_x_axis(Svg& svg, const PlotArea& area, const std::vector<Tick>& ticks, double max, const std::string& title) {
  double last_label_end = -1e9;
  for (const Tick& tick : ticks) {
    if (tick.value > max * 1.0001) break;
    const double x = area.left + tick.value / max * area.width;
    svg.line(x, area.top, x, area.bottom(), Svg::stroked(kGridColour, 1));
    const double half = Svg::text_width(tick.label, kTickFont) / 2;
    if (x - half > last_label_end + 4) {  // labels that would touch are left out
      svg.text(x, area.bottom() + 15, tick.label, {kTickFont, Svg::Anchor::middle});
      last_label_end = x + half;
    }
  }
  svg.line(area.left, area.bottom(), area.right(), area.bottom(), Svg::stroked("#444", 1));
  svg.text(area.left + area.width / 2, area.bottom() + 32, title, {kTickFont, Svg::Anchor::middle});
}

double draw_legend(Svg& svg, double x, double y, const std::vector<LegendEntry>& entries) {
  for (const LegendEntry& entry : entries) {
    draw_mark(svg, x, y, entry);
    svg.text(x + 19, y, entry.label, {kLegendFont});
    y += kLegendRow;
  }
  return y;
}

double draw_legend_row(Svg& svg, double x, double y, double max_x, const std::vector<LegendEntry>& entries) {
  const double start = x;
  for (const LegendEntry& entry : entries) {
    const double width = 19 + Svg::text_width(entry.label, kLegendFont) + 14;
    if (x + width > max_x && x > start) {
      x = start;
      y += kLegendRow;
    }
    draw_mark(svg, x, y, entry);
    svg.text(x + 19, y, entry.label, {kLegendFont});
    x += width;
  }
  return y + kLegendRow;
}

}  // namespace oomlab::report
