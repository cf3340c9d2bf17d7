// Replays of the synthetic fixtures through the caching allocator. make_fixtures.py's model
// follows PyTorch's rules for the settings these fixtures use (512-byte rounding, pools per
// stream, best fit by size then address, the split thresholds, release-and-retry under a cap),
// so each must replay with zero divergent events and PyTorch's reserved peak. Real snapshots
// from record/record_snapshots.py are what prove it against PyTorch itself.
#include "harness/replay/replay_report.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/replay/budget_inference.hpp"
#include "harness/replay/replay_record.hpp"
#include "harness/replay/snapshot_file.hpp"
#include "harness/replay/tests/fixture_files.hpp"

namespace oomlab::replay {
namespace {

using namespace oomlab::literals;
using namespace oomlab::replay::testing;

ReplayReport analyse(const std::string& fixture, const ReplayRequest& request = {}) {
  return analyse_snapshot(load_snapshot(fixture_path(fixture)), request);
}

std::string divergence_of(const ReplayReport& report) {
  if (!report.fidelity.first_divergence) return "(none)";
  const Divergence& d = *report.fidelity.first_divergence;
  return "event " + std::to_string(d.event) + ": " + d.request + "; PyTorch: " + d.pytorch + "; oomlab: " + d.oomlab;
}

const WhatIfRow* row(const ReplayReport& report, const std::string& setting) {
  for (const WhatIfRow& r : report.what_if) {
    if (r.setting == setting) return &r;
  }
  return nullptr;
}

TEST(Replay, FixturesMadeByPyTorchsRulesReplayWithZeroDivergentEvents) {
  for (const char* fixture :
       {"training_protocol2.pickle", "training_protocol3.pickle", "training_protocol4.pickle",
        "training_protocol5.pickle", "training_protocol4.pickle.gz", "record_stream.pickle",
        "empty_cache_frames.pickle", "empty_cache_no_frames.pickle", "expandable_segments.pickle",
        "newer_torch_keys.pickle", "surrogate_filename.pickle", "oom_fragmentation.pickle",
        "fragmentation_oom.pickle"}) {
    const ReplayReport report = analyse(fixture);
    EXPECT_EQ(report.fidelity.divergent_events, 0u) << fixture << ": " << divergence_of(report);
    EXPECT_EQ(report.fidelity.peak_reserved, report.pytorch_peak_reserved) << fixture;
    EXPECT_TRUE(report.reproduces_pytorch()) << fixture;
  }
}

TEST(Replay, TheOomFixtureFailsAtTheSameRequestUnderTheInferredCap) {
  const ReplayReport report = analyse("oom_fragmentation.pickle");
  // 60 MiB reserved was reached; the oom (40 MiB reserved, 24 MiB free on the device) bounds it by 64.
  EXPECT_TRUE(report.budget_inferred);
  EXPECT_EQ(report.budget_range.low, 60_MiB);
  ASSERT_TRUE(report.budget_range.high.has_value());
  EXPECT_EQ(*report.budget_range.high, 64_MiB);
  EXPECT_EQ(report.config.budget, 60_MiB);
  ASSERT_EQ(report.fidelity.ooms.size(), 1u);
  ASSERT_TRUE(report.oom.has_value());
  EXPECT_TRUE(report.oom->pytorch_failed_too);
  EXPECT_EQ(report.events.events[report.oom->event].kind, ReplayEventKind::oom);
  ASSERT_FALSE(report.oom->frames.empty());
  EXPECT_EQ(report.oom->frames.front(), "frag.py:22 big");
  // Six kept 6 MiB blocks and the 30 MiB request: 66 MiB live, over any cap the trace allows.
  EXPECT_EQ(report.need_allocated, 66_MiB);
  EXPECT_EQ(report.oom->info.diagnosis, memory::Diagnosis::capacity);
}

TEST(Replay, AFragmentationOomIsDiagnosedWithItsSitesAndExpandableSegmentsFitIt) {
  ReplayRequest request;
  request.what_if = true;
  const ReplayReport report = analyse("fragmentation_oom.pickle", request);
  ASSERT_TRUE(report.oom.has_value());
  EXPECT_EQ(report.oom->info.diagnosis, memory::Diagnosis::fragmentation) << report.oom->message;
  ASSERT_FALSE(report.oom->frames.empty());
  EXPECT_EQ(report.oom->frames.front(), "frag2.py:21 gather_checkpoint");
  EXPECT_EQ(report.oom->frames.back(), "frag2.py:30 train_step");
  // The peak: three 4 MiB kept blocks and three 14 MiB fillers.
  ASSERT_EQ(report.top_sites.size(), 2u);
  EXPECT_EQ(report.top_sites[0].site, "frag2.py:15 activations");
  EXPECT_EQ(report.top_sites[0].bytes, 42_MiB);
  EXPECT_EQ(report.top_sites[0].blocks, 3u);
  EXPECT_EQ(report.top_sites[1].site, "frag2.py:12 keep_sample");
  EXPECT_EQ(report.top_sites[1].bytes, 12_MiB);
  // The what-if: as recorded it fails; the expandable twin fits under the same cap.
  ASSERT_FALSE(report.what_if.empty());
  EXPECT_FALSE(report.what_if.front().fits);
  const WhatIfRow* expandable = row(report, "expandable_segments:True");
  ASSERT_NE(expandable, nullptr);
  EXPECT_TRUE(expandable->fits);
  EXPECT_LE(expandable->peak_reserved, report.config.budget);
  EXPECT_NE(best_fix(report.what_if), nullptr);
}

TEST(Replay, WhatIfTriesEveryRemedyTheAllocatorCanExpress) {
  ReplayRequest request;
  request.what_if = true;
  const ReplayReport report = analyse("training_protocol4.pickle", request);
  std::vector<std::string> settings;
  for (const WhatIfRow& r : report.what_if) settings.push_back(r.setting);
  EXPECT_TRUE(report.what_if.front().as_recorded);
  EXPECT_NE(row(report, "expandable_segments:True"), nullptr);
  EXPECT_NE(row(report, "roundup_power2_divisions:4"), nullptr);
  bool empty_cache_row = false;
  for (const std::string& s : settings) empty_cache_row = empty_cache_row || s.rfind("empty_cache() at ", 0) == 0;
  EXPECT_TRUE(empty_cache_row) << "the training loop's iteration ends are its phase boundaries";
  for (const WhatIfRow& r : report.what_if) EXPECT_TRUE(r.fits) << r.setting;
}

TEST(Replay, TheTrainingLoopsIterationEndsAreItsPhases) {
  const ReplayReport report = analyse("training_protocol4.pickle");
  EXPECT_FALSE(report.phases.from_snapshot_marks);
  EXPECT_GE(report.phases.boundaries.size(), 2u);
  EXPECT_FALSE(report.growth.steady);
}

TEST(Replay, AGivenBudgetReplacesTheInferredOne) {
  ReplayRequest request;
  request.budget = "1GiB";
  const ReplayReport report = analyse("oom_fragmentation.pickle", request);
  EXPECT_FALSE(report.budget_inferred);
  EXPECT_EQ(report.config.budget, 1_GiB);
  // PyTorch failed there, oomlab under a 1 GiB cap does not: a divergence, said plainly.
  EXPECT_TRUE(report.fidelity.fits());
  ASSERT_TRUE(report.fidelity.first_divergence.has_value());
  EXPECT_EQ(report.fidelity.first_divergence->pytorch, "out of memory");
  EXPECT_FALSE(report.reproduces_pytorch() && report.fidelity.fits() == (report.events.ooms == 0));
}

TEST(Replay, ASnapshotWithoutHistoryIsAClearError) {
  try {
    analyse("no_history.pickle");
    FAIL() << "a snapshot without a trace replayed";
  } catch (const SnapshotError& e) {
    expect_one_line(e.what(), "_record_memory_history");
  }
}

TEST(Replay, ATraceThatStartsMidRunSaysSo) {
  const ReplayReport report = analyse("mid_run_trace.pickle");
  bool noted = false;
  for (const std::string& note : report.notes)
    noted = noted || note.find("starts after the run did") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Replay, ADivergentDecisionIsReportedWithBothSides) {
  // A 3 MiB request that got a 4 MiB segment: PyTorch's rules give 20 MiB.
  Snapshot snapshot;
  TraceEntry segment;
  segment.action = TraceAction::segment_alloc;
  segment.addr = 0x7f0000000000;
  segment.size = 4_MiB;
  TraceEntry alloc = segment;
  alloc.action = TraceAction::alloc;
  alloc.size = 3_MiB;
  snapshot.device_traces = {{segment, alloc}};
  const ReplayReport report = analyse_snapshot(snapshot, {});
  ASSERT_TRUE(report.fidelity.first_divergence.has_value());
  EXPECT_EQ(report.fidelity.first_divergence->request, "alloc 3.00MiB on stream 0");
  EXPECT_EQ(report.fidelity.first_divergence->pytorch, "segment_alloc 4.00MiB at 0x7f0000000000");
  EXPECT_EQ(report.fidelity.first_divergence->oomlab, "segment_alloc 20.00MiB");
  EXPECT_FALSE(report.reproduces_pytorch());
}

TEST(Replay, TheRecordIsTheUsualRunRecord) {
  ReplayRequest request;
  request.what_if = true;
  const ReplayReport report = analyse("oom_fragmentation.pickle", request);
  const RunRecord record = replay_record(report, fixture_path("oom_fragmentation.pickle"));
  const RunRecord read = run_record_from_json(to_json(record));
  EXPECT_EQ(read, record);
  EXPECT_EQ(read.schema_version, kRunRecordSchemaVersion);
  EXPECT_EQ(read.scenario, "replay");
  EXPECT_EQ(read.variant, "oom_fragmentation.pickle");
  EXPECT_EQ(read.device.kind, "dry");
  EXPECT_TRUE(read.knobs.empty());
  EXPECT_EQ(read.outcome.status, OutcomeStatus::oom);
  EXPECT_EQ(read.expected, "oom");
  EXPECT_TRUE(read.matches_expectation);
  EXPECT_EQ(read.memory.peak_reserved, 60_MiB);
  EXPECT_EQ(read.metrics.at("divergent_events"), 0.0);
  EXPECT_EQ(read.metrics.count("what_if.expandable_segments_true.peak_reserved"), 1u);
}

// garbage_collection_threshold: a cached segment released before a request's new one, with no
// oom before it, is a collection (reserved > threshold x cap) or a retry: either bounds the cap.
TEST(BudgetInference, AGarbageCollectionWithoutAnOomBoundsTheCap) {
  const auto event = [](ReplayEventKind kind, std::uint64_t addr, std::uint64_t size) {
    ReplayEvent e;
    e.kind = kind;
    e.addr = addr;
    e.size = size;
    return e;
  };
  DeviceEvents device;
  device.events = {event(ReplayEventKind::segment_alloc, 0x100000000, 12_MiB),
                   event(ReplayEventKind::alloc, 0x100000000, 12_MiB),
                   event(ReplayEventKind::free, 0x100000000, 12_MiB),
                   event(ReplayEventKind::segment_free, 0x100000000, 12_MiB),
                   event(ReplayEventKind::segment_alloc, 0x200000000, 14_MiB),
                   event(ReplayEventKind::alloc, 0x200000000, 14_MiB)};
  device.events[2].alloc_event = 1;
  const ReplayPlan plan = plan_replay(device, Snapshot{});
  memory::AllocatorConfig config;
  config.garbage_collection_threshold = 0.25;
  const BudgetRange range = infer_budget(device, plan, config);
  EXPECT_EQ(range.low, 14_MiB);
  ASSERT_TRUE(range.high.has_value());
  // Collected at 12 MiB reserved: 0.25 x cap < 12 MiB, cap < 48 MiB (looser than the retry's 26 MiB).
  EXPECT_EQ(*range.high, 48_MiB - 1);
  EXPECT_EQ(range.collections, 1u);
  EXPECT_NE(range.describe().find("1 garbage collection"), std::string::npos) << range.describe();
  config.garbage_collection_threshold = 0;  // without it the release was a retry
  EXPECT_EQ(*infer_budget(device, plan, config).high, 26_MiB - 1);
}

}  // namespace
}  // namespace oomlab::replay
