// Pieces every chart draws the same way: the plot frame with its grid and tick labels, and the
// legend (placed beside or above the data by the caller, never over it).
#pragma once
#include <string>
#include <vector>

#include "harness/report/chart_style.hpp"
#include "harness/report/svg.hpp"

namespace oomlab::report {

struct PlotArea {
  double left = 0, top = 0, width = 0, height = 0;
  double right() const { return left + width; }
  double bottom() const { return top + height; }
};

// Horizontal grid lines and labels at `ticks` on the left of `area` (values from 0 to `max`,
// upwards), and the rotated axis title.
void draw_y_axis(Svg& svg, const PlotArea& area, const std::vector<Tick>& ticks, double max, const std::string& title);
// Vertical grid lines and labels at `ticks` under `area` (values from 0 to `max`, rightwards).
void draw_x_axis(Svg& svg, const PlotArea& area, const std::vector<Tick>& ticks, double max, const std::string& title);

struct LegendEntry {
  std::string label;
  std::string colour;
  enum class Mark { box, dashed_line, line } mark = Mark::box;
};
// One entry per row from (x, y) down; returns the y below the last row.
double draw_legend(Svg& svg, double x, double y, const std::vector<LegendEntry>& entries);
// In a row from (x, y) rightwards, wrapping at `max_x`; returns the y below the last row.
double draw_legend_row(Svg& svg, double x, double y, double max_x, const std::vector<LegendEntry>& entries);

}  // namespace oomlab::report
