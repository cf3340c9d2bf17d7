// The deterministic fields and how their changes read.
#include <gtest/gtest.h>

#include "harness/memory/size.hpp"
#include "harness/report/record_fields.hpp"
#include "harness/report/tests/sample_records.hpp"

namespace oomlab::report {
namespace {

using namespace oomlab::literals;
using testing::leak_record;

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += (text.empty() ? "" : "; ") + line;
  return text;
}

TEST(RecordFields, TimingsTimestampsAndMachineAreNotDeterministic) {
  RunRecord other = leak_record();
  other.step_seconds = {1, 2, 3};
  other.timestamp = "2030-01-01T00:00:00Z";
  other.git_commit = "ffffffffffff";
  other.device.name = "another machine";
  other.throughput = {5, "images/s"};
  other.metrics["empty_cache_seconds"] = 9;
  other.metrics["profile_ms.fwd"] = 3;
  EXPECT_TRUE(field_differences(leak_record(), other).empty()) << joined(field_differences(leak_record(), other));
  for (const char* timing : {"empty_cache_seconds", "profile_ms.fwd.attention", "batch_wait_ms", "batch_wait_ms_max",
                             "gpu_idle_fraction", "samples_per_second"}) {
    EXPECT_TRUE(is_timing_metric(timing)) << timing;
  }
  for (const char* counted :
       {"leak_detected_at_step", "predicted_oom_step", "leak_bytes_per_step", "segments_created"}) {
    EXPECT_FALSE(is_timing_metric(counted)) << counted;
  }
}

TEST(RecordFields, ChangesReadAsTheIssueAsksWithSizesFormatted) {
  RunRecord now = leak_record();
  now.outcome.step = 20;
  now.memory.peak_allocated += 1_MiB;
  EXPECT_EQ(joined(field_differences(leak_record(), now)),
            "oom step 14 -> 20; peak_allocated 10.68GiB -> 10.68GiB (+1.00MiB)");
}

TEST(RecordFields, EveryStoryFieldIsCompared) {
  struct Mutation {
    const char* what;
    void (*apply)(RunRecord&);
    const char* expected;
  };
  const Mutation mutations[] = {
      {"oom step", [](RunRecord& r) { r.outcome.step = 20; }, "oom step 14 -> 20"},
      {"leak step", [](RunRecord& r) { r.metrics["leak_detected_at_step"] = 10; },
       "metric leak_detected_at_step 9 -> 10"},
      {"leak rate", [](RunRecord& r) { r.metrics["leak_bytes_per_step"] = 1 << 20; },
       "metric leak_bytes_per_step 480.00MiB -> 1.00MiB"},
      {"predicted", [](RunRecord& r) { r.metrics["predicted_oom_step"] = 18; }, "metric predicted_oom_step 16 -> 18"},
      {"budget", [](RunRecord& r) { r.budget.bytes -= 1; }, "budget 11.56GiB -> 11.56GiB (-1B)"},
      {"tag peak", [](RunRecord& r) { r.memory.per_tag_peak["retained"] += 512; },
       "peak of tag retained 7.03GiB -> 7.03GiB (+512B)"},
      {"tag removed", [](RunRecord& r) { r.memory.per_tag_peak.erase("workspace"); },
       "peak of tag workspace 32.50MiB -> (none)"},
      {"need", [](RunRecord& r) { r.memory.need += 2_MiB; }, "need 17.70GiB -> 17.70GiB (+2.00MiB)"},
      {"need reserved", [](RunRecord& r) { r.memory.need_reserved = 20_GiB; }, "need_reserved (none) -> 20.00GiB"},
      {"knob", [](RunRecord& r) { r.knobs["batch"] = "8"; }, "knob batch 4 -> 8"},
      {"diagnosis", [](RunRecord& r) { r.outcome.diagnosis = "capacity"; }, "diagnosis leak -> capacity"},
      {"status",
       [](RunRecord& r) {
         r.outcome.status = OutcomeStatus::ok;
         r.outcome.step = -1;
         r.outcome.diagnosis.clear();
       },
       "outcome oom -> ok"},
      {"metric added", [](RunRecord& r) { r.metrics["segments_created"] = 3; }, "metric segments_created (none) -> 3"},
  };
  for (const Mutation& m : mutations) {
    RunRecord now = leak_record();
    m.apply(now);
    const auto changes = field_differences(leak_record(), now);
    ASSERT_FALSE(changes.empty()) << m.what;
    EXPECT_EQ(changes.front(), m.expected) << m.what;
  }
}

TEST(RecordFields, AllocatorScopeLeavesOutWhatOnlyKernelsOrTheDeviceDecide) {
  RunRecord cuda = leak_record();
  cuda.device.kind = "cuda";
  cuda.outcome.message = "a message with the device's own words";
  cuda.metrics["final_loss"] = 0.25;
  cuda.memory.peak_device_used = 13_GiB;
  EXPECT_TRUE(field_differences(leak_record(), cuda, FieldScope::allocator).empty());
  cuda.memory.peak_reserved += 2_MiB;
  EXPECT_EQ(joined(field_differences(leak_record(), cuda, FieldScope::allocator)),
            "peak_reserved 11.06GiB -> 11.06GiB (+2.00MiB)");
}

TEST(RecordFields, ProcessIdsInMessagesAreNotDifferences) {
  EXPECT_EQ(without_process_ids("worker 0 (pid 21243) failed; pid 7, pid x"), "worker 0 (pid N) failed; pid N, pid x");
  RunRecord a = leak_record(), b = leak_record();
  a.outcome.message = "worker 0 (pid 21243): cudaHostAlloc failed";
  b.outcome.message = "worker 0 (pid 21556): cudaHostAlloc failed";
  EXPECT_TRUE(field_differences(a, b).empty());
}

TEST(RecordFields, UnlimitedBudgetReadsAsUnlimited) {
  RunRecord unlimited = leak_record();
  unlimited.budget.bytes = 18446744073709551615ull;
  EXPECT_EQ(field_differences(leak_record(), unlimited).front(), "budget 11.56GiB -> unlimited");
}

}  // namespace
}  // namespace oomlab::report
