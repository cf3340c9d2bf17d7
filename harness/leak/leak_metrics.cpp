// Leak findings -> RunContext metrics.
#include "harness/leak/leak_metrics.hpp"

namespace oomlab::leak {

void record_leak_metrics(const LeakDetector& detector, RunContext& context) {
  const auto& first = detector.first_detection();
  context.set_metric("leak_detected", first ? 1.0 : 0.0);
  if (!first) {
    context.set_metric("leak_bytes_per_step", static_cast<double>(detector.verdict().bytes_per_step));
    return;
  }
  context.set_metric("leak_bytes_per_step", static_cast<double>(first->bytes_per_step));
  context.set_metric("leak_detected_at_step", static_cast<double>(first->step));
  context.set_metric("leak_tag", static_cast<double>(static_cast<int>(first->tag)));
  context.set_metric("leak_tag_bytes_per_step", static_cast<double>(first->tag_bytes_per_step));
  context.set_metric("leak_site_bytes_per_step", static_cast<double>(first->site_bytes_per_step));
  context.set_metric("predicted_oom_step", static_cast<double>(first->predicted_oom_step));
}

}  // namespace oomlab::leak
