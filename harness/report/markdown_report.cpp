#include "harness/report/markdown_report.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "harness/memory/size.hpp"
#include "harness/report/bar_chart.hpp"
#include "harness/report/chart_style.hpp"
#include "harness/report/file_stem.hpp"
#include "harness/report/markdown_text.hpp"
#include "harness/report/number_format.hpp"
#include "harness/report/record_fields.hpp"
#include "harness/report/scenario_table.hpp"
#include "harness/report/segment_chart.hpp"
#include "harness/report/step_noise.hpp"
#include "harness/report/timeline_chart.hpp"

namespace oomlab::report {

namespace {

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

// One scenario at one scale: the records of every variant on every device.
struct Section {
  std::string scenario, scale;
  std::vector<const LoadedRecord*> records;
  std::map<std::pair<std::string, std::string>, std::size_t> per_variant_machine;  // how many records
};

// Maps, not searches: a set of thousands of records (all of one variant, or each its own) must
// not cost their square.
std::vector<Section> sections_of(const ResultSet& set) {
  std::vector<Section> sections;
  std::map<std::pair<std::string, std::string>, std::size_t> index;  // (scenario, scale) -> section
  for (const LoadedRecord& loaded : set.records) {
    const RunRecord& r = loaded.record;
    const auto [it, added] = index.emplace(std::make_pair(r.scenario, r.scale), sections.size());
    if (added) sections.push_back(Section{r.scenario, r.scale, {}, {}});
    Section& section = sections[it->second];
    section.records.push_back(&loaded);
    ++section.per_variant_machine[{r.variant, machine_name(r)}];
  }
  std::stable_sort(sections.begin(), sections.end(), [](const Section& a, const Section& b) {
    return a.scenario < b.scenario;  // scales stay in the order the records came
  });
  return sections;
}

// The variants of a section in the order they first appear, one record each for the traces
// (the allocation sequence is the same on every device: any record of the variant will do).
std::vector<const LoadedRecord*> one_per_variant(const Section& section) {
  std::vector<const LoadedRecord*> chosen;
  std::set<std::string> variants;
  for (const LoadedRecord* loaded : section.records) {
    if (variants.insert(loaded->record.variant).second) chosen.push_back(loaded);
  }
  return chosen;
}

// What tells apart several records of one variant on one machine: their file name past the
// suite's "<scenario>.<variant>.<device>-<scale>" ("cold" for ...cuda-full.cold.json).
std::string file_tag(const LoadedRecord& loaded) {
  const RunRecord& r = loaded.record;
  std::string name = std::filesystem::path(loaded.file).filename().string();
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) name.resize(name.size() - 5);
  const std::string standard = r.scenario + "." + r.variant + "." + r.device.kind + "-" + r.scale;
  if (name.rfind(standard, 0) == 0 && name.size() > standard.size() + 1) return name.substr(standard.size() + 1);
  return name;
}

std::string group_label(const LoadedRecord& loaded, const Section& section, bool several_machines) {
  const RunRecord& r = loaded.record;
  std::string label = several_machines ? r.variant + " \xC2\xB7 " + machine_name(r) : r.variant;
  const std::size_t same = section.per_variant_machine.at({r.variant, machine_name(r)});
  return same > 1 ? label + " (" + file_tag(loaded) + ")" : label;
}

BarChart peaks_chart(const Section& section, bool several_machines) {
  BarChart chart;
  chart.title = section.scenario + " at " + section.scale + " scale: peaks per variant";
  chart.axis_title = "memory";
  chart.bytes = true;
  chart.series = {
      {"peak allocated", "#1f77b4"}, {"peak reserved", "#aec7e8"}, {"need (peak without a cap)", "#ff9896"}};
  std::set<std::uint64_t> budgets;
  for (const LoadedRecord* loaded : section.records) {
    const RunRecord& r = loaded->record;
    BarGroup group;
    group.label = group_label(*loaded, section, several_machines);
    group.values = {double(r.memory.peak_allocated), double(r.memory.peak_reserved),
                    r.memory.need ? double(r.memory.need) : -1};
    group.texts = {bytes_label(r.memory.peak_allocated), bytes_label(r.memory.peak_reserved),
                   r.memory.need ? bytes_label(r.memory.need) : ""};
    chart.groups.push_back(group);
    if (r.budget.bytes != kUnlimited) budgets.insert(r.budget.bytes);
  }
  if (budgets.size() == 1) {
    const RunRecord& r = section.records.front()->record;
    chart.reference = static_cast<double>(*budgets.begin());
    chart.reference_label =
        "budget " + (r.budget.profile.empty() ? "" : r.budget.profile + " ") + bytes_label(*budgets.begin());
  }
  return chart;
}

std::optional<BarChart> throughput_chart(const Section& section, bool several_machines) {
  BarChart chart;
  std::string unit;
  for (const LoadedRecord* loaded : section.records) {
    const RunRecord& r = loaded->record;
    if (r.throughput.unit.empty() || !(r.throughput.value > 0)) continue;
    if (unit.empty()) unit = r.throughput.unit;
    if (r.throughput.unit != unit) continue;  // one unit per chart
    BarGroup group;
    group.label = group_label(*loaded, section, several_machines);
    group.values = {r.throughput.value};
    group.texts = {throughput_text(r)};
    group.errors = {step_noise(r).relative};
    chart.groups.push_back(group);
  }
  if (chart.groups.empty()) return std::nullopt;
  chart.title = section.scenario + " at " + section.scale + " scale: throughput per variant";
  chart.axis_title = "throughput (" + unit + "; the whiskers are the step-time noise)";
  chart.series = {{"throughput (" + unit + ")", "#2ca02c"}};
  return chart;
}

constexpr const char* kTimelineCaption =
    "Allocated memory stacked by tag, free-but-reserved memory grey above it, the budget dashed, the OOM in red; x: "
    "the allocator's events in order, with the steps marked.";
// A snapshot records no tags (weights, activations, ...): its allocated memory is one band; what
// the memory is, by the user's own line, is the sites table below the chart.
constexpr const char* kReplayTimelineCaption =
    "Allocated memory in blue (a snapshot records no tags: the sites below say what it is), free-but-reserved memory "
    "grey above it, the budget dashed, the OOM in red; x: the requests in order, with the iterations the replay "
    "found marked.";

bool is_replay(const RunRecord& r) { return r.scenario == "replay" && r.scale == "snapshot"; }

// The largest allocation sites at the peak of each replay, from its record (oomlab replay --out
// writes them as metrics "top_site.<site>": harness/replay/replay_record.hpp).
std::string sites_table(const Section& section) {
  constexpr const char* kTopSite = "top_site.";
  std::string rows;
  for (const LoadedRecord* loaded : section.records) {
    std::vector<std::pair<double, std::string>> sites;
    for (const auto& [name, bytes] : loaded->record.metrics) {
      if (name.rfind(kTopSite, 0) == 0) sites.emplace_back(bytes, name.substr(std::string(kTopSite).size()));
    }
    std::stable_sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [bytes, site] : sites) {
      rows += "| " + markdown_text(loaded->record.variant) + " | " + markdown_text(site) + " | " +
              bytes_label(metric_byte_count(bytes)) + " |\n";
    }
  }
  if (rows.empty()) return "";
  return "Live memory at the peak by allocation site (the user's own line), the largest of each replay:\n\n"
         "| variant | site | live at the peak |\n|---|---|---:|\n" +
         rows + "\n";
}

// "<scenario>-<scale>-<kind>.svg" from record fields made safe (file_stem.hpp); `stem` is the
// section's, unique in the report.
std::string chart_name(const std::string& stem, const std::string& kind) { return stem + "-" + kind + ".svg"; }

// Each section's file stem: two sections whose names read alike once made safe ("a/b" and "a_b")
// get "-2", "-3", ... so neither's charts replace the other's.
std::vector<std::string> section_stems(const std::vector<Section>& sections) {
  std::vector<std::string> stems;
  std::set<std::string> taken;
  for (const Section& section : sections) {
    const std::string base = safe_file_stem(section.scenario + "-" + section.scale);
    std::string stem = base;
    for (int n = 2; taken.count(stem); ++n) stem = base + "-" + std::to_string(n);
    taken.insert(stem);
    stems.push_back(stem);
  }
  return stems;
}

}  // namespace

ReportFiles build_report(const ResultSet& set, const TraceProvider& traces, const std::string& charts_link) {
  ReportFiles files;
  std::string& md = files.markdown;
  md += "# oomlab report\n\n";
  md += markdown_code(set.source) + ": " + markdown_text(set.describe()) + ".";
  std::set<std::string> commits;
  for (const LoadedRecord& loaded : set.records) {
    if (!loaded.record.git_commit.empty()) commits.insert(loaded.record.git_commit);
  }
  if (!commits.empty()) {
    md += " Commit" + std::string(commits.size() == 1 ? " " : "s ");
    for (const std::string& commit : commits) md += markdown_code(commit) + " ";
    md.pop_back();
    md += ".";
  }
  md += "\n\n";
  for (const std::string& note : set.notes) md += "> Note: " + markdown_text(note) + "\n\n";
  if (set.records.empty()) {
    md += "No run records here (only benchmarks: compare them with `oomlab compare`).\n";
    return files;
  }
  std::map<std::string, std::vector<const LoadedRecord*>> per_scenario;
  for (const LoadedRecord& loaded : set.records) per_scenario[loaded.record.scenario].push_back(&loaded);

  std::string last_scenario;
  const std::vector<Section> sections = sections_of(set);
  const std::vector<std::string> stems = section_stems(sections);
  for (std::size_t s = 0; s < sections.size(); ++s) {
    const Section& section = sections[s];
    if (section.scenario != last_scenario) {
      md += "## " + markdown_text(section.scenario) + "\n\n" + scenario_table(per_scenario.at(section.scenario));
    }
    last_scenario = section.scenario;
    md += "### " + markdown_text(section.scale) + " scale\n\n";
    std::set<std::string> machines;
    for (const LoadedRecord* loaded : section.records) machines.insert(machine_name(loaded->record));
    const bool several_machines = machines.size() > 1;
    const bool replay_section = std::all_of(section.records.begin(), section.records.end(),
                                            [](const LoadedRecord* loaded) { return is_replay(loaded->record); });

    // Timelines and segments: one trace per variant.
    std::vector<std::pair<const LoadedRecord*, TraceSource>> traced;
    std::set<std::string> origins;
    for (const LoadedRecord* loaded : one_per_variant(section)) {
      std::string why_not;
      std::optional<TraceSource> source = traces(*loaded, why_not);
      if (!source) {
        md += "> No memory timeline for " + markdown_text(loaded->record.variant) + ": " + markdown_text(why_not) +
              "\n\n";
        continue;
      }
      origins.insert(source->origin);
      traced.emplace_back(loaded, std::move(*source));
    }
    std::vector<TimelinePanel> timeline;
    std::vector<SegmentPanel> segments;
    for (const auto& [loaded, source] : traced) {
      const RunRecord& r = loaded->record;
      TimelinePanel panel{r.variant + ": " + describe_outcome(r.outcome), &source.trace, r.budget.bytes,
                          r.budget.profile};
      panel.oom_step = r.outcome.status == OutcomeStatus::oom ? r.outcome.step : -1;
      panel.oom = r.outcome.status == OutcomeStatus::oom;
      if (is_replay(r)) panel.step_name = "iteration";
      timeline.push_back(panel);
      std::string moment;
      memory::TraceState state = state_at_peak(source.trace, moment);
      segments.push_back({r.variant + " " + moment, std::move(state)});
    }
    if (!timeline.empty()) {
      const std::string name = chart_name(stems[s], "timeline");
      files.charts.emplace_back(
          name, timeline_svg(section.scenario + " at " + section.scale + " scale: memory over the run", timeline));
      md += "![memory over the run](" + charts_link + "/" + name + ")\n\n";
      md += replay_section ? kReplayTimelineCaption : kTimelineCaption;
      md += " Trace: ";
      for (const std::string& origin : origins) md += markdown_text(origin) + "; ";
      md.resize(md.size() - 2);
      md += ".\n\n";
      const std::string segments_name = chart_name(stems[s], "segments");
      files.charts.emplace_back(segments_name,
                                segment_svg(section.scenario + " at " + section.scale +
                                                " scale: segments at the OOM or the peak of reserved memory",
                                            segments));
      md += "![segments at the peak](" + charts_link + "/" + segments_name + ")\n\n";
    }
    if (replay_section) md += sites_table(section);
    const std::string peaks_name = chart_name(stems[s], "peaks");
    files.charts.emplace_back(peaks_name, bar_svg(peaks_chart(section, several_machines)));
    md += "![peaks](" + charts_link + "/" + peaks_name + ")\n\n";
    if (auto chart = throughput_chart(section, several_machines)) {
      const std::string name = chart_name(stems[s], "throughput");
      files.charts.emplace_back(name, bar_svg(*chart));
      md += "![throughput](" + charts_link + "/" + name + ")\n\n";
    }
  }
  return files;
}

}  // namespace oomlab::report
