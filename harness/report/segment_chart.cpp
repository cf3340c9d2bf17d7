#include "harness/report/segment_chart.hpp"

#include <algorithm>

#include "harness/report/chart_parts.hpp"

namespace oomlab::report {

namespace {

constexpr double kWidth = 800;
constexpr double kLeft = 20, kPlotWidth = 730;  // room for the last tick label
constexpr double kStripTitle = 34, kStripHeight = 30, kStripGap = 14;

struct FreeSummary {
  std::size_t free = 0, largest = 0;
};

// Free bytes of a segment: the gaps between its live blocks and after the last one.
template <class Visit>
FreeSummary free_pieces(const memory::TraceState& state, std::uint32_t id, std::size_t mapped, Visit visit) {
  FreeSummary summary;
  std::size_t cursor = 0;
  const auto gap = [&](std::size_t from, std::size_t to) {
    if (to <= from) return;
    summary.free += to - from;
    summary.largest = std::max(summary.largest, to - from);
    visit(from, to);
  };
  for (auto it = state.blocks().lower_bound({id, 0}); it != state.blocks().end() && it->first.first == id; ++it) {
    gap(cursor, it->first.second);
    cursor = std::max(cursor, it->first.second + it->second.bytes);
  }
  gap(cursor, mapped);
  return summary;
}

}  // namespace

memory::TraceState state_at_peak(const RecordedTrace& trace, std::string& moment) {
  const auto& events = trace.events;
  std::size_t stop = events.size();  // the events applied: [0, stop)
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind == memory::EventKind::oom) {
      stop = i;
      moment = "at the OOM";
      break;
    }
  }
  if (stop == events.size()) {
    std::int64_t reserved = -1, allocated = -1;
    for (std::size_t i = 0; i < events.size(); ++i) {
      const memory::TraceEvent& e = events[i];
      if (e.reserved_after > reserved || (e.reserved_after == reserved && e.allocated_after > allocated)) {
        reserved = e.reserved_after;
        allocated = e.allocated_after;
        stop = i + 1;
      }
    }
    moment = "at the peak";
  }
  memory::TraceState state = trace.before;
  for (std::size_t i = 0; i < stop && i < events.size(); ++i) state.apply(events[i]);
  return state;
}

std::string describe_segments(const memory::TraceState& state) {
  FreeSummary total;
  for (const auto& [id, segment] : state.segments()) {
    const FreeSummary one = free_pieces(state, id, segment.mapped, [](std::size_t, std::size_t) {});
    total.free += one.free;
    total.largest = std::max(total.largest, one.largest);
  }
  const std::size_t segments = state.segments().size();
  return bytes_label(state.reserved()) + " reserved in " + std::to_string(segments) + " segment" +
         (segments == 1 ? "" : "s") + ": " + bytes_label(state.allocated()) + " in blocks, " +
         bytes_label(total.free) + " free (largest free piece " + bytes_label(total.largest) + ")";
}

std::string segment_svg(const std::string& title, const std::vector<SegmentPanel>& panels) {
  double max_reserved = 1;
  std::array<bool, memory::kTagCount> used{};
  for (const SegmentPanel& panel : panels) {
    max_reserved = std::max(max_reserved, static_cast<double>(panel.state.reserved()));
    for (const auto& [key, block] : panel.state.blocks()) used[static_cast<int>(block.tag)] = true;
  }
  std::string unit;
  const std::vector<Tick> ticks = byte_ticks(max_reserved, unit, 8);
  const double scale_max = std::max(max_reserved, ticks.back().value);
  std::vector<LegendEntry> legend;
  for (memory::Tag tag : memory::all_tags()) {
    if (used[static_cast<int>(tag)]) legend.push_back({memory::tag_name(tag), tag_colour(tag)});
  }
  legend.push_back({"free (reserved, no block)", kFreeColour});
  legend.push_back({"segment boundary", "#222", LegendEntry::Mark::line});

  const double strips_top = 64;
  const double height = strips_top + (kStripTitle + kStripHeight + kStripGap) * static_cast<double>(panels.size()) + 40;
  Svg svg(kWidth, height);
  svg.text(kLeft, 20, title, {14, Svg::Anchor::start, true});
  draw_legend_row(svg, kLeft, 42, kWidth - 10, legend);
  const auto px = [&](double bytes) { return kLeft + bytes / scale_max * kPlotWidth; };
  double top = strips_top;
  for (const SegmentPanel& panel : panels) {
    svg.text(kLeft, top + 13, panel.title, {11.5, Svg::Anchor::start, true});
    svg.text(kLeft, top + 28, describe_segments(panel.state), {11});
    const double y = top + kStripTitle;
    double offset = 0;  // bytes of the segments drawn so far
    for (const auto& [id, segment] : panel.state.segments()) {
      const double base = offset;
      svg.rect(px(base), y, px(base + segment.mapped) - px(base), kStripHeight, Svg::filled(kFreeColour));
      for (auto it = panel.state.blocks().lower_bound({id, 0});
           it != panel.state.blocks().end() && it->first.first == id; ++it) {
        const double x0 = px(base + static_cast<double>(it->first.second));
        const double x1 = px(base + static_cast<double>(it->first.second + it->second.bytes));
        svg.rect(x0, y, std::max(x1 - x0, 0.4), kStripHeight, Svg::filled(tag_colour(it->second.tag)));
      }
      offset += static_cast<double>(segment.mapped);
      svg.line(px(offset), y - 2, px(offset), y + kStripHeight + 2, Svg::stroked("#222", 0.8));
    }
    svg.line(px(0), y - 2, px(0), y + kStripHeight + 2, Svg::stroked("#222", 0.8));
    top += kStripTitle + kStripHeight + kStripGap;
  }
  const PlotArea axis{kLeft, top - kStripGap, kPlotWidth, 0};
  draw_x_axis(svg, axis, ticks, scale_max, "reserved memory, segments laid end to end (" + unit + ")");
  return svg.str();
}

}  // namespace oomlab::report
