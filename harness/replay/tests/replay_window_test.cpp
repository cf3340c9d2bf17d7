// --from/--to: the window's numbers are those of a replay that ran everything before it (the
// state it starts from), reported over the window alone; bad windows are one line each.
#include "harness/replay/replay_window.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include "harness/replay/replay_report.hpp"
#include "harness/replay/snapshot_file.hpp"
#include "harness/replay/tests/fixture_files.hpp"

namespace oomlab::replay {
namespace {

using testing::expect_one_line;
namespace fs = std::filesystem;

const Snapshot& torch_snapshot(const std::string& name) {
  static std::map<std::string, Snapshot> loaded;
  auto [it, added] = loaded.try_emplace(name);
  if (added) {
    it->second = load_snapshot(
        (fs::path(OOMLAB_REPLAY_FIXTURES) / "torch" / (name + "-torch2.11.0_cu130.pickle.gz")).string());
  }
  return it->second;
}

ReplayReport windowed(const std::string& name, const std::string& from, const std::string& to) {
  ReplayRequest request;
  request.from = from;
  request.to = to;
  return analyse_snapshot(torch_snapshot(name), request);
}

std::string window_error(const std::string& from, const std::string& to) {
  try {
    windowed("srgan_leak", from, to);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(ReplayWindow, ThePeakInsideTheWindowIsTheWholeRunsWhenTheWindowHoldsIt) {
  const ReplayReport whole = analyse_snapshot(torch_snapshot("srgan_leak"), {});
  const std::size_t peak_entry = whole.events.events.at(whole.fidelity.peak_allocated_event).trace_index;
  const ReplayReport around =
      windowed("srgan_leak", "entry:" + std::to_string(peak_entry - 10), "entry:" + std::to_string(peak_entry + 10));
  EXPECT_FALSE(around.window.whole);
  // Only reachable with the blocks allocated before the window still live: the state was replayed.
  EXPECT_EQ(around.fidelity.peak_allocated, whole.fidelity.peak_allocated);
  EXPECT_EQ(around.fidelity.peak_reserved, around.pytorch_peak_reserved);
  EXPECT_TRUE(around.reproduces_pytorch());
  EXPECT_LT(around.events.allocs, 21u);  // the counts are the window's
  EXPECT_EQ(around.live_at_peak, whole.live_at_peak);
}

TEST(ReplayWindow, AWindowBeforeThePeakReportsItsOwnLowerPeak) {
  const ReplayReport whole = analyse_snapshot(torch_snapshot("srgan_leak"), {});
  const ReplayReport early = windowed("srgan_leak", "", "entry:1000");
  EXPECT_LT(early.fidelity.peak_allocated, whole.fidelity.peak_allocated);
  EXPECT_EQ(early.fidelity.peak_reserved, early.pytorch_peak_reserved);
  EXPECT_LE(early.pytorch_peak_reserved, whole.pytorch_peak_reserved);
  EXPECT_EQ(early.window.begin_entry, 0u);
  EXPECT_EQ(early.window.end_entry, 1000u);
  EXPECT_FALSE(early.iteration_growth.leak) << "a window of the model's setup has no loop";
}

TEST(ReplayWindow, AnOomOutsideTheWindowIsNotReported) {
  const ReplayReport whole = analyse_snapshot(torch_snapshot("frag_oom"), {});
  ASSERT_TRUE(whole.oom.has_value());
  const std::size_t oom_entry = whole.events.events.at(whole.oom->event).trace_index;
  const ReplayReport before = windowed("frag_oom", "", "entry:" + std::to_string(oom_entry));
  EXPECT_FALSE(before.oom.has_value());
  EXPECT_TRUE(before.fidelity.fits());
  const ReplayReport with_it = windowed("frag_oom", "entry:" + std::to_string(oom_entry - 5), "");
  ASSERT_TRUE(with_it.oom.has_value());
  EXPECT_EQ(with_it.oom->event, whole.oom->event);
  EXPECT_EQ(with_it.oom->info.diagnosis, whole.oom->info.diagnosis);
}

TEST(ReplayWindow, TimesCountFromTheFirstEntry) {
  const ReplayReport report = windowed("srgan_leak", "6.28s", "");
  const std::vector<TraceEntry>& trace = torch_snapshot("srgan_leak").device_traces.at(0);
  ASSERT_GT(report.window.begin_entry, 0u);
  EXPECT_GE(trace[report.window.begin_entry].time_us - trace.front().time_us, 6'280'000);
  EXPECT_LT(trace[report.window.begin_entry - 1].time_us - trace.front().time_us, 6'280'000);
  EXPECT_NE(report.window.text.find("after the first entry"), std::string::npos) << report.window.text;
}

TEST(ReplayWindow, BadWindowsAreOneLineEach) {
  expect_one_line(window_error("12x", ""), "--from '12x': not a window bound");
  expect_one_line(window_error("5", ""), "--from '5': not a window bound");
  expect_one_line(window_error("entry:", ""), "entry:N takes a trace entry's index");
  expect_one_line(window_error("", "-1s"), "--to '-1s': not a window bound");
  expect_one_line(window_error("entry:99999999", ""), "past the trace, which has 5512 entries");
  expect_one_line(window_error("999s", ""), "past the trace, which spans 6.296s");
  expect_one_line(window_error("entry:200", "entry:100"), "--from 'entry:200' is not before --to 'entry:100'");
  expect_one_line(window_error("1s", "2s"), "no trace entry falls in the window");
}

}  // namespace
}  // namespace oomlab::replay
