#include "harness/report/timeline_chart.hpp"

#include <algorithm>
#include <array>

#include "harness/report/chart_parts.hpp"
#include "harness/report/number_format.hpp"

namespace oomlab::report {

namespace {

using memory::EventKind;
using memory::Tag;

constexpr double kWidth = 800;
constexpr double kLeft = 78, kPlotWidth = 520, kLegendX = kLeft + kPlotWidth + 24;
constexpr double kPanelTitle = 32, kPlotHeight = 150, kPanelBottom = 44;
constexpr double kPanelHeight = kPanelTitle + kPlotHeight + kPanelBottom;
constexpr int kColumns = 260;  // samples across the plot: 2 px each
// A trace with no tags (every block `other`: a replayed snapshot) is one band of allocated
// memory, drawn in a colour of its own: the tag `other`'s grey would read as the free band.
constexpr const char* kUntaggedColour = "#1f77b4";
constexpr const char* kUntaggedLabel = "allocated (no tags)";

// Bottom to top: what lives the whole run first, what comes and goes on top.
constexpr std::array<Tag, memory::kTagCount> kStackOrder = {
    Tag::weights, Tag::optimizer, Tag::grads, Tag::data, Tag::workspace, Tag::other, Tag::activations, Tag::retained};

struct Column {
  std::array<double, memory::kTagCount> tag_bytes{};
  double allocated = -1;  // of the sample kept: the column's most allocated moment
  double reserved = 0;    // the column's most reserved
};

struct Series {
  std::vector<Column> columns;
  std::vector<std::pair<double, std::int64_t>> steps;  // (x in 0..1, step)
  std::vector<std::pair<double, std::int64_t>> ooms;   // (x in 0..1, step in progress)
  double peak_reserved = 0;
  std::array<bool, memory::kTagCount> tag_used{};
};

Series sample(const RecordedTrace& trace) {
  Series series;
  series.columns.resize(kColumns);
  std::array<double, memory::kTagCount> tags{};
  for (const auto& [key, block] : trace.before.blocks())
    tags[static_cast<int>(block.tag)] += static_cast<double>(block.bytes);
  double allocated = static_cast<double>(trace.before.allocated());
  double reserved = static_cast<double>(trace.before.reserved());
  const std::size_t n = trace.events.size();
  std::int64_t step = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const memory::TraceEvent& e = trace.events[i];
    // Logical position: the event's index, so every panel spans its whole run.
    const double x = n > 1 ? static_cast<double>(i) / static_cast<double>(n - 1) : 0;
    if (e.kind == EventKind::alloc || e.kind == EventKind::free) {
      tags[static_cast<int>(e.tag)] = static_cast<double>(e.tag_allocated_after);
    }
    allocated = static_cast<double>(e.allocated_after);
    reserved = static_cast<double>(e.reserved_after);
    if (e.kind == EventKind::step) {
      step = e.step;
      series.steps.emplace_back(x, e.step);
    }
    if (e.kind == EventKind::oom) series.ooms.emplace_back(x, step);
    Column& column = series.columns[std::min<std::size_t>(static_cast<std::size_t>(x * kColumns), kColumns - 1)];
    if (allocated > column.allocated) {
      column.allocated = allocated;
      column.tag_bytes = tags;
    }
    column.reserved = std::max(column.reserved, reserved);
    series.peak_reserved = std::max(series.peak_reserved, reserved);
    for (int t = 0; t < memory::kTagCount; ++t) series.tag_used[t] = series.tag_used[t] || tags[t] > 0;
  }
  // Columns no event fell into carry the state on.
  for (int c = 1; c < kColumns; ++c) {
    if (series.columns[c].allocated < 0) series.columns[c] = series.columns[c - 1];
  }
  if (!series.columns.empty() && series.columns[0].allocated < 0) series.columns[0].allocated = 0;
  return series;
}

// Step ticks, thinned so their labels never touch.
std::vector<Tick> step_ticks(const Series& series) {
  std::vector<Tick> ticks;
  if (series.steps.empty()) return ticks;
  const double label_width = Svg::text_width(std::to_string(series.steps.back().second), 11) + 8;
  std::size_t every = 1;
  while (every < series.steps.size()) {
    double closest = 1e9;
    for (std::size_t i = every; i < series.steps.size(); i += every) {
      closest = std::min(closest, (series.steps[i].first - series.steps[i - every].first) * kPlotWidth);
    }
    if (closest >= label_width) break;
    every = every == 1 ? 2 : (every == 2 ? 5 : every * 2);
  }
  for (std::size_t i = 0; i < series.steps.size(); i += every) {
    ticks.push_back({series.steps[i].first, std::to_string(series.steps[i].second)});
  }
  return ticks;
}

void draw_panel(Svg& svg, double top, const TimelinePanel& panel, const Series& series, double ymax,
                const std::vector<Tick>& y_ticks, const std::string& unit, bool untagged) {
  svg.text(kLeft, top + 14, panel.title, {12.5, Svg::Anchor::start, true});
  const PlotArea area{kLeft, top + kPanelTitle, kPlotWidth, kPlotHeight};
  draw_y_axis(svg, area, y_ticks, ymax, "memory (" + unit + ")");
  const auto px = [&](double x) { return area.left + x * area.width; };
  const auto py = [&](double bytes) { return area.bottom() - std::min(bytes, ymax) / ymax * area.height; };
  const double column_width = area.width / kColumns;
  const auto column_x = [&](int c, bool right) { return area.left + (c + (right ? 1 : 0)) * column_width; };

  // Free but reserved: from the allocated bytes up to the reserved ones.
  std::vector<std::pair<double, double>> free_band;
  for (int c = 0; c < kColumns; ++c) {
    free_band.emplace_back(column_x(c, false), py(series.columns[c].reserved));
    free_band.emplace_back(column_x(c, true), py(series.columns[c].reserved));
  }
  for (int c = kColumns - 1; c >= 0; --c) {
    free_band.emplace_back(column_x(c, true), py(series.columns[c].allocated));
    free_band.emplace_back(column_x(c, false), py(series.columns[c].allocated));
  }
  svg.polygon(free_band, Svg::filled(kFreeColour));
  // The tags, stacked in kStackOrder; each band's bottom is the previous band's top.
  std::vector<double> base(kColumns, 0);
  for (Tag tag : kStackOrder) {
    if (!series.tag_used[static_cast<int>(tag)]) continue;
    std::vector<std::pair<double, double>> band;
    std::vector<double> top_edge(kColumns);
    for (int c = 0; c < kColumns; ++c) {
      top_edge[c] = base[c] + series.columns[c].tag_bytes[static_cast<int>(tag)];
      band.emplace_back(column_x(c, false), py(top_edge[c]));
      band.emplace_back(column_x(c, true), py(top_edge[c]));
    }
    for (int c = kColumns - 1; c >= 0; --c) {
      band.emplace_back(column_x(c, true), py(base[c]));
      band.emplace_back(column_x(c, false), py(base[c]));
    }
    svg.polygon(band, Svg::filled(untagged ? kUntaggedColour : tag_colour(tag)));
    base = top_edge;
  }
  if (panel.budget != std::numeric_limits<std::uint64_t>::max()) {
    const double y = py(static_cast<double>(panel.budget));
    svg.line(area.left, y, area.right(), y, Svg::stroked(kBudgetColour, 1.6, "6,4"));
    const std::string label = "budget " + (panel.budget_name.empty() ? "" : panel.budget_name + " ") +
                              bytes_label(panel.budget);
    // Above the line, or under it when the line runs along the top of the plot.
    const double label_y = y - 16 < area.top ? y + 4 : y - 16;
    svg.rect(area.left + 4, label_y, Svg::text_width(label, 11) + 6, 14, Svg::filled("white", 0.85));
    svg.text(area.left + 7, label_y + 11, label, {11});
  }
  std::vector<std::pair<double, std::string>> ooms;  // (x, label)
  for (const auto& [x, step] : series.ooms)
    ooms.emplace_back(x, step >= 0 ? "OOM in step " + std::to_string(step) : "OOM");
  if (ooms.empty() && panel.oom) {
    ooms.emplace_back(1.0, std::string("OOM") +
                               (panel.oom_step >= 0 ? " in step " + std::to_string(panel.oom_step) : "") +
                               ", outside the allocator");
  }
  for (const auto& [x, label] : ooms) {
    svg.line(px(x), area.top, px(x), area.bottom(), Svg::stroked(kOomColour, 2, "3,2"));
    const double width = Svg::text_width(label, 11);
    const bool left = px(x) + 4 + width > area.right();
    const double label_x = left ? px(x) - 4 - width : px(x) + 4;
    svg.rect(label_x - 2, area.top + 2, width + 4, 14, Svg::filled("white", 0.85));
    svg.text(label_x, area.top + 13, label, {11, Svg::Anchor::start, true, kOomColour});
  }
  const std::vector<Tick> x_ticks = step_ticks(series);
  if (x_ticks.empty()) {
    draw_x_axis(svg, area, {}, 1, "allocator events (no " + panel.step_name + "s marked)");
  } else {
    draw_x_axis(svg, area, x_ticks, 1, panel.step_name + " (x: allocator events in order)");
  }
}

}  // namespace

std::string timeline_svg(const std::string& title, const std::vector<TimelinePanel>& panels) {
  std::vector<Series> series;
  double ymax = 1;
  std::array<bool, memory::kTagCount> used{};
  for (const TimelinePanel& panel : panels) {
    series.push_back(sample(*panel.trace));
    ymax = std::max(ymax, series.back().peak_reserved);
    if (panel.budget != std::numeric_limits<std::uint64_t>::max())
      ymax = std::max(ymax, static_cast<double>(panel.budget));
    for (int t = 0; t < memory::kTagCount; ++t) used[t] = used[t] || series.back().tag_used[t];
  }
  const bool untagged = std::none_of(used.begin(), used.end(), [](bool u) { return u; }) ||
                        (std::count(used.begin(), used.end(), true) == 1 && used[static_cast<int>(Tag::other)]);
  std::string unit;
  const std::vector<Tick> y_ticks = byte_ticks(ymax * 1.05, unit);
  ymax = std::max(ymax * 1.05, y_ticks.back().value);
  Svg svg(kWidth, 34 + kPanelHeight * static_cast<double>(panels.size()));
  svg.text(kLeft, 20, title, {14, Svg::Anchor::start, true});
  for (std::size_t i = 0; i < panels.size(); ++i) {
    draw_panel(svg, 30 + kPanelHeight * static_cast<double>(i), panels[i], series[i], ymax, y_ticks, unit, untagged);
  }
  // The legend beside the plots: stacking order read top-down, as the bands appear.
  std::vector<LegendEntry> legend;
  legend.push_back({"free (reserved)", kFreeColour});
  for (auto it = kStackOrder.rbegin(); it != kStackOrder.rend() && !untagged; ++it) {
    if (used[static_cast<int>(*it)]) legend.push_back({memory::tag_name(*it), tag_colour(*it)});
  }
  if (untagged) legend.push_back({kUntaggedLabel, kUntaggedColour});
  legend.push_back({"budget", kBudgetColour, LegendEntry::Mark::dashed_line});
  legend.push_back({"OOM", kOomColour, LegendEntry::Mark::dashed_line});
  draw_legend(svg, kLegendX, 30 + kPanelTitle + 12, legend);
  return svg.str();
}

}  // namespace oomlab::report
