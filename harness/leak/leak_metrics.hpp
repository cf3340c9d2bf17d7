// The detector's findings as run-record metrics, so `oomlab run` records a leak beside the
// outcome (the outcome itself stays ok or oom; an OOM after a leak has diagnosis `leak`).
#pragma once
#include "harness/leak/leak_detector.hpp"
#include "harness/runner/run_context.hpp"

namespace oomlab::leak {

// Sets leak_detected (0/1) and leak_bytes_per_step (the last fit's slope, 0 on a flat run);
// after a detection also leak_detected_at_step, leak_tag (the memory::Tag number),
// leak_tag_bytes_per_step, leak_site_bytes_per_step and predicted_oom_step (-1: no budget),
// all from the first detection: the early warning a user would have had.
void record_leak_metrics(const LeakDetector& detector, RunContext& context);

}  // namespace oomlab::leak
