#include "harness/extrapolate/extrapolate_record.hpp"

#include "harness/replay/replay_record.hpp"

namespace oomlab::extrapolate {

RunRecord extrapolation_record(const Extrapolation& model, const Prediction& prediction) {
  replay::ReplayReport report;
  report.device = prediction.events.device;
  report.devices_with_requests = 1;
  report.events = prediction.events;
  report.config = prediction.setup.config;
  report.budget_text = prediction.setup.budget_text;
  report.fidelity = prediction.result;
  report.need_allocated = prediction.need_allocated;
  report.need_reserved = prediction.need_reserved;
  report.oom = prediction.oom;
  report.phases = prediction.phases;
  report.top_sites = prediction.top_sites;
  report.what_if = prediction.what_if;
  report.notes = prediction.setup.notes;
  for (const std::string& note : model.notes) report.notes.push_back(note);
  RunRecord record = replay::replay_record(report, model.reference_trace().file);
  record.scenario = "extrapolate";
  record.device.name = "extrapolation of device " + std::to_string(prediction.events.device);
  record.knobs[model.knob.name] = std::to_string(prediction.at);
  // Nothing of PyTorch's to compare with at a value it never ran: the replay's fidelity metrics go.
  record.metrics.erase("divergent_events");
  record.metrics.erase("pytorch_peak_reserved");
  record.metrics["exact"] = prediction.exact() && model.exact() ? 1.0 : 0.0;
  record.metrics["estimated"] = model.estimated() ? 1.0 : 0.0;
  record.metrics["bound_bytes"] = static_cast<double>(prediction.bound_bytes);
  record.metrics["unfitted_requests"] = static_cast<double>(model.unfitted.size());
  record.metrics["workspace_requests"] = static_cast<double>(model.workspaces);
  record.expected = record.outcome.status == OutcomeStatus::ok ? "ok" : "oom";  // a question: any outcome is an answer
  record.matches_expectation = true;
  return record;
}

}  // namespace oomlab::extrapolate
