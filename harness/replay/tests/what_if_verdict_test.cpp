// Every sentence of the what-if's verdict agrees with the numbers beside it: a leak's verdict is
// the leak (site, rate, when the budget runs out), never a setting; "the live bytes exceed the
// budget" only when they do; the next smaller card is a smaller card.
#include "harness/replay/replay_report_verdict.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/replay/snapshot_file.hpp"

namespace oomlab::replay {
namespace {

namespace fs = std::filesystem;
using namespace oomlab::literals;

ReplayReport analyse(const std::string& name, const std::string& budget) {
  ReplayRequest request;
  request.what_if = true;
  request.budget = budget;
  const fs::path file = fs::path(OOMLAB_REPLAY_FIXTURES) / "torch" / (name + "-torch2.11.0_cu130.pickle.gz");
  return analyse_snapshot(load_snapshot(file.string()), request);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(WhatIfVerdict, ALeaksVerdictIsTheLeakAtEveryBudget) {
  for (const char* budget : {"", "400MiB", "450MiB", "2GiB"}) {
    SCOPED_TRACE(budget);
    const ReplayReport report = analyse("srgan_leak", budget);
    const std::string verdict = what_if_verdict(report);
    EXPECT_TRUE(has(verdict, "verdict: a leak, which no allocator setting fixes")) << verdict;
    EXPECT_TRUE(has(verdict, "29.50MiB per iteration")) << verdict;
    EXPECT_TRUE(has(verdict, "record_snapshots.py:177 srgan_leak")) << verdict;
    for (const WhatIfRow& row : report.what_if) {
      if (!row.as_recorded) EXPECT_FALSE(has(verdict, row.setting + " fits")) << verdict;
    }
    if (report.fidelity.fits()) {
      EXPECT_TRUE(has(verdict, "more iteration")) << verdict;
    } else {
      EXPECT_TRUE(has(verdict, "it runs out in iteration")) << verdict;
    }
  }
}

TEST(WhatIfVerdict, TheIterationsLeftAreTheBudgetsRoomOverTheRate) {
  const ReplayReport report = analyse("srgan_leak", "2GiB");
  // (2048 - 488) MiB of room at 29.5 MiB per iteration: 52 more.
  EXPECT_EQ(report.need_reserved, 488_MiB);
  EXPECT_TRUE(has(what_if_verdict(report), "reserved peak 488.00MiB) it runs out after about 52 more iterations"))
      << what_if_verdict(report);
}

TEST(WhatIfVerdict, LiveBytesExceedTheBudgetOnlyWhenTheyDo) {
  // frag_oom needs 828 MiB live: under 700 MiB the live bytes alone do not fit.
  const ReplayReport small = analyse("frag_oom", "700MiB");
  ASSERT_GT(small.need_allocated, 700_MiB);
  EXPECT_TRUE(has(what_if_verdict(small), "the live bytes alone (828.00MiB) exceed the budget (700.00MiB)"))
      << what_if_verdict(small);
  // At 900 MiB they fit; whatever the verdict says, it does not say they exceed it.
  const ReplayReport larger = analyse("frag_oom", "900MiB");
  ASSERT_LE(larger.need_allocated, 900_MiB);
  EXPECT_FALSE(has(what_if_verdict(larger), "exceed")) << what_if_verdict(larger);
}

TEST(WhatIfVerdict, AFixNamesItsOwnReservedPeakAndTheBudget) {
  const ReplayReport report = analyse("frag_oom", "1GiB");
  const std::string verdict = what_if_verdict(report);
  const WhatIfRow* fix = best_fix(report.what_if);
  ASSERT_NE(fix, nullptr) << verdict;
  EXPECT_EQ(verdict, "verdict: " + fix->setting + " fits, with a " + format_size(fix->peak_reserved) +
                         " reserved peak (as recorded it fails; budget 1.00GiB)");
  EXPECT_LE(fix->peak_reserved, 1_GiB);
}

TEST(WhatIfVerdict, TheNextSmallerCardIsAtLeastFivePercentSmaller) {
  const memory::GpuProfile* rtx4060ti = memory::find_gpu_profile("rtx4060ti-16g");
  ASSERT_NE(rtx4060ti, nullptr);
  const memory::GpuProfile* next = next_smaller_profile(rtx4060ti->budget());
  ASSERT_NE(next, nullptr);
  EXPECT_NE(next->name, "rtx4080");  // 10 MiB less: the same size of card
  EXPECT_LE(static_cast<double>(next->budget()), 0.95 * static_cast<double>(rtx4060ti->budget()));
  for (const memory::GpuProfile& profile : memory::gpu_profiles()) {
    const bool between = profile.budget() > next->budget() &&
                         static_cast<double>(profile.budget()) <= 0.95 * static_cast<double>(rtx4060ti->budget());
    EXPECT_FALSE(between) << profile.name << " is a nearer smaller card than " << next->name;
  }
}

}  // namespace
}  // namespace oomlab::replay
