// dry plans tensors it never backs: its host memory must not grow with the sizes it plans. A
// dry run of gpt_train at batch 1M built its token batch on the host (12.6 GB, 85 s). Every
// registered scenario's every variant with its batch knob at the largest value (1M at most) runs
// here, need planning included, in one process whose peak RSS is then checked.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <string>

#include "harness/runner/runner.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab {
namespace {

long peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;  // KiB on Linux
}

TEST(DryHostMemory, DoesNotGrowWithTheBatchPlanned) {
  int runs = 0;
  for (const Scenario* scenario : ScenarioRegistry::instance().all()) {
    for (const KnobSpec& knob : scenario->knobs()) {
      if (knob.name != "batch") continue;
      for (const VariantSpec& variant : scenario->variants()) {
        RunRequest request;
        request.scenario = scenario->name();
        request.variant = variant.name;
        request.device = DeviceKind::dry;
        request.scale = Scale::full;
        request.quiet = true;
        request.progress = false;
        request.steps = 1;
        const std::int64_t batch = std::min<std::int64_t>(knob.max, 1 << 20) / knob.multiple_of * knob.multiple_of;
        request.set = {{"batch", std::to_string(batch)}};
        try {
          resolve_run(request);
        } catch (const std::invalid_argument&) {
          continue;  // a variant whose other knobs refuse this batch (micro_batches, gpus)
        }
        const RunRecord record = run_variant_in_process(request);
        EXPECT_NE(record.outcome.status, OutcomeStatus::error)
            << scenario->name() << "/" << variant.name << ": " << record.outcome.message;
        ++runs;
      }
    }
  }
  EXPECT_GE(runs, 10);
  EXPECT_LT(peak_rss_mib(), 1024) << "dry's host memory grew with the planned tensors";
}

}  // namespace
}  // namespace oomlab
