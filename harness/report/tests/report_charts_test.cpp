// The report's charts and page from a real allocator trace (a dry allocator running a small
// leaking loop into an OOM): the trace reads back exactly, each chart carries its axes, units,
// budget and OOM, and every SVG renders to PNG (rsvg-convert; skipped when it is not installed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/memory/caching_allocator.hpp"
#include "harness/memory/site.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/trace_export.hpp"
#include "harness/report/bar_chart.hpp"
#include "harness/report/markdown_report.hpp"
#include "harness/report/segment_chart.hpp"
#include "harness/report/tests/sample_records.hpp"
#include "harness/report/timeline_chart.hpp"
#include "harness/report/trace_reader.hpp"

namespace oomlab::report {
namespace {

using namespace oomlab::literals;
using memory::Tag;
using testing::ScratchDir;

constexpr std::size_t kBudget = 96_MiB;

// Weights, then steps that each keep 6 MiB of "retained" features and free their activations,
// until the budget is reached: the srgan_leak story in miniature. `leak` false: the fixed loop.
nlohmann::json leaking_run_trace(bool leak, std::size_t trace_capacity = 1 << 16) {
  auto source = memory::make_dry_source();
  memory::AllocatorConfig config;
  config.budget = kBudget;
  config.trace_capacity = trace_capacity;
  memory::CachingAllocator allocator(*source, config);
  std::vector<void*> live = {allocator.allocate(16_MiB, Tag::weights, 0),
                             allocator.allocate(16_MiB, Tag::optimizer, 0)};
  std::vector<void*> activations;
  try {
    for (int step = 0; step < 20; ++step) {
      allocator.mark_step(step);
      memory::SiteScope forward("forward");
      for (int i = 0; i < 4; ++i) activations.push_back(allocator.allocate(3_MiB + i * 1_MiB, Tag::activations, 0));
      void* kept = allocator.allocate(6_MiB, Tag::retained, 0);
      if (leak) {
        live.push_back(kept);
      } else {
        allocator.deallocate(kept);
      }
      for (void* p : activations) allocator.deallocate(p);
      activations.clear();
    }
  } catch (const memory::OomError&) {
    live.insert(live.end(), activations.begin(), activations.end());
  }
  nlohmann::json json = memory::chrome_trace(allocator);
  for (void* p : live) allocator.deallocate(p);
  return json;
}

RunRecord record_of(const std::string& variant, bool oom) {
  RunRecord r = testing::leak_record();
  r.variant = variant;
  r.budget = {kBudget, "", "96.00MiB"};
  if (!oom) {
    r.outcome = {OutcomeStatus::ok, "", -1, "", 0};
    r.expected = "ok";
  }
  return r;
}

TEST(TraceReader, ReadsBackWhatTheExporterWrote) {
  const nlohmann::json json = leaking_run_trace(true);
  const RecordedTrace trace = read_trace(json, "leak.json");
  ASSERT_FALSE(trace.events.empty());
  EXPECT_TRUE(trace.logical_time);
  EXPECT_EQ(trace.dropped, 0u);
  EXPECT_EQ(trace.events.back().kind, memory::EventKind::oom);
  EXPECT_EQ(trace.sites.at(trace.events.back().site), "forward");
  // Dropped events: the state before the kept ones comes back too, and replays to the same end.
  const RecordedTrace cut = read_trace(leaking_run_trace(true, 40), "cut.json");
  EXPECT_EQ(cut.events.size(), 40u);
  EXPECT_GT(cut.dropped, 0u);
  EXPECT_FALSE(cut.before.blocks().empty());
  memory::TraceState full_end = trace.before, cut_end = cut.before;
  for (const auto& e : trace.events) full_end.apply(e);
  for (const auto& e : cut.events) cut_end.apply(e);
  EXPECT_EQ(full_end.allocated(), cut_end.allocated());
  EXPECT_EQ(full_end.reserved(), cut_end.reserved());
  EXPECT_EQ(full_end.blocks().size(), cut_end.blocks().size());
}

TEST(ReportCharts, TimelineHasBudgetOomStepsAndUnits) {
  const RecordedTrace broken = read_trace(leaking_run_trace(true), "b");
  const RecordedTrace fixed = read_trace(leaking_run_trace(false), "f");
  const std::string svg = timeline_svg("leak at tiny scale", {{"broken: oom", &broken, kBudget, "tiny-card"},
                                                               {"fixed: ok", &fixed, kBudget, ""}});
  for (const char* expected : {"budget tiny-card 96.00 MiB", "OOM in step", "memory (MiB)", "step (x: allocator events",
                               ">retained<", ">activations<", ">free (reserved)<"}) {
    EXPECT_NE(svg.find(expected), std::string::npos) << expected;
  }
}

TEST(ReportCharts, SegmentViewDescribesTheFreePieces) {
  const RecordedTrace broken = read_trace(leaking_run_trace(true), "b");
  std::string moment;
  const memory::TraceState peak = state_at_peak(broken, moment);
  EXPECT_EQ(moment, "at the OOM");
  EXPECT_GT(peak.reserved(), 80_MiB);
  const RecordedTrace fixed = read_trace(leaking_run_trace(false), "f");
  const memory::TraceState fixed_peak = state_at_peak(fixed, moment);
  EXPECT_EQ(moment, "at the peak");
  EXPECT_GT(fixed_peak.allocated(), 32_MiB) << "the most allocated moment of the reserved peak";
  const std::string text = describe_segments(peak);
  EXPECT_NE(text.find(" reserved in "), std::string::npos) << text;
  EXPECT_NE(text.find("largest free piece"), std::string::npos) << text;
  const std::string svg = segment_svg("segments", {{"broken", peak}});
  EXPECT_NE(svg.find("segments laid end to end (MiB)"), std::string::npos);
}

TEST(ReportCharts, BarsCarryValuesAndTheBudget) {
  BarChart chart;
  chart.title = "peaks";
  chart.axis_title = "memory";
  chart.bytes = true;
  chart.series = {{"peak allocated", "#1f77b4"}, {"peak reserved", "#aec7e8"}};
  chart.groups = {{"broken", {90.0 * MiB, 95.0 * MiB}, {"90.00 MiB", "95.00 MiB"}, {}},
                  {"fixed", {40.0 * MiB, 60.0 * MiB}, {"40.00 MiB", "60.00 MiB"}, {}}};
  chart.reference = kBudget;
  chart.reference_label = "budget 96.00 MiB";
  const std::string svg = bar_svg(chart);
  for (const char* expected : {"memory (MiB)", "90.00 MiB", "budget 96.00 MiB", ">broken<", ">fixed<"}) {
    EXPECT_NE(svg.find(expected), std::string::npos) << expected;
  }
}

TEST(ReportPage, OneTablePerScenarioThenChartsPerScale) {
  ResultSet set;
  set.source = "results/test";
  set.records.push_back({record_of("broken", true), "srgan_leak.broken.dry-full.json", false});
  set.records.push_back({record_of("fixed", false), "srgan_leak.fixed.dry-full.json", false});
  const nlohmann::json broken_json = leaking_run_trace(true), fixed_json = leaking_run_trace(false);
  const TraceProvider traces = [&](const LoadedRecord& loaded, std::string&) -> std::optional<TraceSource> {
    return TraceSource{read_trace(loaded.record.variant == "broken" ? broken_json : fixed_json, "t"), "a test trace"};
  };
  const ReportFiles files = build_report(set, traces, "charts");
  const std::string& md = files.markdown;
  EXPECT_EQ(md.find("## Summary"), std::string::npos) << "the tables per scenario replace one table of every record";
  EXPECT_NE(md.find("## srgan_leak\n\n| variant | scale | budget | outcome: dry | peak allocated: dry | "
                    "peak reserved: dry |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| broken | full | 96.00 MiB | oom @ step 14 (leak) | 10.68 GiB | 11.06 GiB |"), std::string::npos)
      << md;
  EXPECT_LT(md.find("| variant | scale |"), md.find("### full scale")) << "the table, then the charts";
  EXPECT_NE(md.find("![memory over the run](charts/srgan_leak-full-timeline.svg)"), std::string::npos) << md;
  EXPECT_NE(md.find("Trace: a test trace."), std::string::npos) << md;
  std::vector<std::string> names;
  for (const auto& [name, svg] : files.charts) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"srgan_leak-full-timeline.svg", "srgan_leak-full-segments.svg",
                                             "srgan_leak-full-peaks.svg"}));
}

// One GPU's folder: dry's full-scale suite, the sm_90a build at both scales, the sm_80 build's
// suite (which repeats dry's records). Rows are variant and scale, columns dry, sm_90a, sm_80.
TEST(ReportPage, MachinesAreColumnsAndRepeatedRecordsOneRow) {
  const auto gpu = [](const std::string& variant, const std::string& scale, const std::string& image, double rate) {
    RunRecord r = testing::training_record();
    r.variant = variant;
    r.scale = scale;
    r.device.image = image;
    r.throughput.value = rate;
    return r;
  };
  RunRecord dry = gpu("bf16", "full", "", 0);
  dry.device = DeviceRecord{};
  dry.device.kind = "dry";
  dry.device.name = "dry (no backing)";
  dry.throughput = {};
  RunRecord dry_again = dry;
  ResultSet set;
  set.source = "results/h200";
  set.records.push_back({gpu("bf16", "small", "compute_80 PTX (JIT)", 2000000), "sm80/suite/a.json", false});
  set.records.push_back({gpu("bf16", "full", "sm_90a", 440000), "sm90a/gpt_train.bf16.cuda-full.json", false});
  set.records.push_back({dry_again, "sm80/suite/gpt_train.bf16.dry-full.json", false});
  set.records.push_back({gpu("bf16", "small", "sm_90a", 2100000), "suite/b.json", false});
  set.records.push_back({dry, "suite/gpt_train.bf16.dry-full.json", false});
  const TraceProvider none = [](const LoadedRecord&, std::string& why_not) -> std::optional<TraceSource> {
    why_not = "none";
    return std::nullopt;
  };
  const std::string md = build_report(set, none, "charts").markdown;
  EXPECT_NE(md.find("| variant | scale | budget | outcome: dry | outcome: sm_90a | outcome: compute_80 PTX (JIT) | "
                    "peak allocated: dry | peak allocated: sm_90a | peak allocated: compute_80 PTX (JIT) | "
                    "peak reserved: dry | peak reserved: sm_90a | peak reserved: compute_80 PTX (JIT) | "
                    "throughput: sm_90a | throughput: compute_80 PTX (JIT) |"),
            std::string::npos)
      << "dry first, then the native build before the PTX one, whatever the load order; dry has no throughput "
         "column\n"
      << md;
  const std::string table =
      md.substr(md.find("| variant"), md.find("\n\n", md.find("| variant")) - md.find("| variant"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 3) << "heading, rule, full and small: no row twice\n"
                                                             << table;
  EXPECT_LT(table.find("| bf16 | full |"), table.find("| bf16 | small |")) << "the story's scale first";
  EXPECT_NE(table.find("| bf16 | full | 11.50 GiB (rtx3060-12g) | ok | ok | | 4.00 GiB | 4.00 GiB | | 5.00 GiB | 5.00 "
                       "GiB | | 440000 tokens/s"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| bf16 | small | 11.50 GiB (rtx3060-12g) | | ok | ok | | 4.00 GiB | 4.00 GiB |"),
            std::string::npos)
      << table;
  EXPECT_NE(md.find("An empty cell: that machine did not run the variant at that scale."), std::string::npos) << md;
  EXPECT_NE(md.find("> dry at full scale: 1 variant has several records (sm80/suite/, suite/), their peaks the same; "
                    "the first is shown."),
            std::string::npos)
      << md;
}

// Every chart renders: rsvg-convert parses the SVG and draws it. Set OOMLAB_REPORT_PNG_DIR to
// keep the PNGs and look at them.
TEST(ReportPage, EverySvgRendersToPng) {
  if (std::system("command -v rsvg-convert >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "rsvg-convert is not installed (Debian: librsvg2-bin)";
  }
  ResultSet set;
  set.source = "results/test";
  set.records.push_back({record_of("broken", true), "a.json", false});
  set.records.push_back({record_of("fixed", false), "b.json", false});
  RunRecord on_gpu = testing::training_record();
  on_gpu.scenario = "srgan_leak";
  on_gpu.variant = "fixed";
  on_gpu.scale = "full";
  set.records.push_back({on_gpu, "c.json", false});
  const nlohmann::json broken_json = leaking_run_trace(true), fixed_json = leaking_run_trace(false);
  const TraceProvider traces = [&](const LoadedRecord& loaded, std::string&) -> std::optional<TraceSource> {
    return TraceSource{read_trace(loaded.record.variant == "broken" ? broken_json : fixed_json, "t"), "a test trace"};
  };
  const ReportFiles files = build_report(set, traces, "charts");
  ASSERT_EQ(files.charts.size(), 4u);  // timeline, segments, peaks and (the GPU record's) throughput
  ScratchDir dir;
  const char* keep = std::getenv("OOMLAB_REPORT_PNG_DIR");
  const std::string out = keep && *keep ? keep : dir.path();
  for (const auto& [name, svg] : files.charts) {
    const std::string svg_path = dir.write(name, svg);
    const std::string png_path = out + "/" + name.substr(0, name.size() - 4) + ".png";
    const std::string command = "rsvg-convert -w 800 -o '" + png_path + "' '" + svg_path + "' 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << name;
    std::error_code error;
    EXPECT_GT(std::filesystem::file_size(png_path, error), 1000u) << name;
  }
}

}  // namespace
}  // namespace oomlab::report
