// Records of `oomlab replay --out` (scenario "replay", scale "snapshot") in compare and report:
// the replay's own rows (largest site by name, iterations, leak, what-if fits, fidelity), the
// OOM gone as "better", a timeline with no tags drawn as one labelled band with iterations
// marked, the sites table on the page, and never a dry re-run of a snapshot.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/memory/caching_allocator.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/trace_export.hpp"
#include "harness/report/comparison.hpp"
#include "harness/report/markdown_report.hpp"
#include "harness/report/rerun_policy.hpp"
#include "harness/report/timeline_chart.hpp"
#include "harness/report/trace_reader.hpp"

namespace oomlab::report {
namespace {

using namespace oomlab::literals;

// A replay record as replay_record() writes it: a leak of 29.5 MiB per iteration over 4
// iterations, its largest site train.py:42, no OOM.
RunRecord replay_record(const std::string& snapshot = "before.pickle") {
  RunRecord r;
  r.scenario = "replay";
  r.variant = snapshot;
  r.device.kind = "dry";
  r.scale = "snapshot";
  r.budget = {488_MiB, "", "488.00MiB inferred"};
  r.outcome.status = OutcomeStatus::ok;
  r.memory.peak_allocated = 400_MiB;
  r.memory.peak_reserved = 488_MiB;
  r.memory.need = 400_MiB;
  r.memory.need_reserved = 488_MiB;
  r.metrics = {{"divergent_events", 0},
               {"iterations", 4},
               {"leak_bytes_per_iteration", 29.5 * 1024 * 1024},
               {"top_site.train.py:42 step", 112.0 * 1024 * 1024},
               {"top_site.train.py:40 forward", 90.0 * 1024 * 1024},
               {"what_if.expandable_segments_true.fits", 1},
               {"what_if.as_recorded.fits", 1}};
  r.expected = "ok";
  r.matches_expectation = true;
  return r;
}

ResultSet set_of(const std::string& source, RunRecord record) {
  ResultSet set;
  set.source = source;
  set.records.push_back({std::move(record), source + ".json", false});
  return set;
}

const ComparisonRow* row(const Comparison& c, const std::string& metric) {
  for (const ComparisonRow& r : c.rows) {
    if (r.metric == metric) return &r;
  }
  return nullptr;
}

TEST(ReplayCompare, TheSameReplayIsTheSameOnEveryRow) {
  const Comparison c = compare_result_sets(set_of("a", replay_record()), set_of("b", replay_record()), {});
  EXPECT_EQ(c.count(Verdict::same), c.rows.size());
  ASSERT_NE(row(c, "site train.py:42 step"), nullptr);
  EXPECT_EQ(row(c, "site train.py:42 step")->a_text, "112.00MiB");
  EXPECT_EQ(row(c, "site train.py:40 forward"), nullptr) << "only the largest site of each side";
  EXPECT_EQ(row(c, "iterations")->a_text, "4");
  EXPECT_EQ(row(c, "leak per iteration")->b_text, "29.50MiB");
  EXPECT_EQ(row(c, "what-if expandable_segments_true fits")->verdict, Verdict::same);
  EXPECT_EQ(row(c, "divergent events")->verdict, Verdict::same);
}

TEST(ReplayCompare, TheLeakFixedAndTheSiteShrunkAreBetter) {
  RunRecord after = replay_record("after.pickle");
  after.metrics.erase("leak_bytes_per_iteration");
  after.metrics["top_site.train.py:42 step"] = 28.0 * 1024 * 1024;
  const Comparison c = compare_result_sets(set_of("a", replay_record()), set_of("b", after), {});
  EXPECT_EQ(row(c, "leak per iteration")->verdict, Verdict::better);
  EXPECT_EQ(row(c, "leak per iteration")->b_text, "no leak");
  // The largest site of B is another line now: both rows, each by its own name.
  EXPECT_EQ(row(c, "site train.py:42 step")->verdict, Verdict::better);
  EXPECT_EQ(row(c, "site train.py:42 step")->delta_text, "-84.00MiB");
  EXPECT_EQ(row(c, "site train.py:40 forward")->verdict, Verdict::same);
  EXPECT_FALSE(c.regression());
}

TEST(ReplayCompare, TheOomGoneIsBetterAndBackIsWorse) {
  RunRecord oom = replay_record("frag_oom.pickle");
  oom.outcome = {OutcomeStatus::oom, "fragmentation", -1, "out of memory", 0};
  oom.expected = "oom";  // PyTorch ran out too: as expected for a replay
  oom.metrics["what_if.as_recorded.fits"] = 0;
  const RunRecord fits = replay_record("frag_expandable.pickle");
  const Comparison gone = compare_result_sets(set_of("a", oom), set_of("b", fits), {});
  EXPECT_EQ(row(gone, "outcome")->verdict, Verdict::better);
  EXPECT_EQ(row(gone, "outcome")->delta_text, "the OOM is gone");
  EXPECT_EQ(row(gone, "what-if as_recorded fits")->verdict, Verdict::better);
  const Comparison back = compare_result_sets(set_of("a", fits), set_of("b", oom), {});
  EXPECT_EQ(row(back, "outcome")->verdict, Verdict::worse);
  EXPECT_TRUE(back.regression());
}

TEST(ReplayCompare, ReleasedGrowthIsShownAndNeitherBetterNorWorse) {
  RunRecord cache = replay_record("generate.pickle");
  cache.metrics.erase("leak_bytes_per_iteration");
  cache.metrics["released_growth_bytes_per_iteration"] = 2.0 * 1024 * 1024;
  RunRecord none = cache;
  none.metrics.erase("released_growth_bytes_per_iteration");
  const Comparison c = compare_result_sets(set_of("a", cache), set_of("b", none), {});
  EXPECT_EQ(row(c, "growth released later")->a_text, "2.00MiB per iteration");
  EXPECT_EQ(row(c, "growth released later")->verdict, Verdict::changed);
  EXPECT_EQ(row(c, "leak per iteration"), nullptr);
}

TEST(ReplayCompare, HostileMetricsPrintAsBytesWithoutOverflow) {
  RunRecord huge = replay_record();
  huge.metrics["top_site.train.py:42 step"] = 1e300;
  huge.metrics["leak_bytes_per_iteration"] = -5;
  const Comparison c = compare_result_sets(set_of("a", replay_record()), set_of("b", huge), {});
  EXPECT_EQ(row(c, "leak per iteration")->b_text, "0B");
  EXPECT_EQ(row(c, "site train.py:42 step")->verdict, Verdict::worse);
}

TEST(ReplayReport, ASnapshotIsNeverReRun) {
  const std::string why = why_not_rerun(replay_record());
  EXPECT_NE(why.find("a replay of a snapshot is not re-run"), std::string::npos) << why;
  EXPECT_NE(why.find("--trace NAME.trace.json"), std::string::npos) << why;
}

// A replay's trace in miniature: every block tagged `other`, step marks as replay --trace adds them.
nlohmann::json untagged_trace() {
  auto source = memory::make_dry_source();
  memory::AllocatorConfig config;
  config.trace_capacity = 1 << 12;
  memory::CachingAllocator allocator(*source, config);
  std::vector<void*> kept;
  for (int iteration = 1; iteration <= 3; ++iteration) {
    allocator.mark_step(iteration);
    void* scratch = allocator.allocate(8_MiB, memory::Tag::other, 0);
    kept.push_back(allocator.allocate(2_MiB, memory::Tag::other, 0));
    allocator.deallocate(scratch);
  }
  nlohmann::json json = memory::chrome_trace(allocator);
  for (void* p : kept) allocator.deallocate(p);
  return json;
}

TEST(ReplayReport, AnUntaggedTimelineIsOneLabelledBandWithIterations) {
  const RecordedTrace trace = read_trace(untagged_trace(), "t");
  TimelinePanel panel{"before.pickle: ok", &trace, 64_MiB, ""};
  panel.step_name = "iteration";
  const std::string svg = timeline_svg("replay at snapshot scale", {panel});
  EXPECT_NE(svg.find("allocated (no tags)"), std::string::npos);
  EXPECT_EQ(svg.find(">other<"), std::string::npos) << "no tag legend for a trace without tags";
  EXPECT_NE(svg.find("iteration (x: allocator events in order)"), std::string::npos);
}

TEST(ReplayReport, ThePageListsTheSitesAndMarksIterations) {
  ResultSet set = set_of("replays", replay_record());
  const nlohmann::json json = untagged_trace();
  const TraceProvider traces = [&](const LoadedRecord&, std::string&) -> std::optional<TraceSource> {
    return TraceSource{read_trace(json, "t"), "the trace written beside each record"};
  };
  const std::string md = build_report(set, traces, "charts").markdown;
  EXPECT_NE(md.find("with the iterations the replay found marked"), std::string::npos) << md;
  EXPECT_NE(md.find("| before.pickle | train.py:42 step | 112.00 MiB |"), std::string::npos) << md;
  EXPECT_LT(md.find("train.py:42 step"), md.find("train.py:40 forward")) << "largest first";
}

}  // namespace
}  // namespace oomlab::report
