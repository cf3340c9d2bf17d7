#include "harness/replay/replay_record.hpp"

#include <cctype>
#include <filesystem>

#include "harness/memory/tags.hpp"

namespace oomlab::replay {

std::string metric_key(const std::string& setting) {
  std::string key;
  for (char c : setting) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (keep) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!keep && !key.empty() && key.back() != '_') key += '_';
  }
  while (!key.empty() && key.back() == '_') key.pop_back();
  return key;
}

RunRecord replay_record(const ReplayReport& report, const std::string& snapshot_path) {
  RunRecord record;
  record.scenario = "replay";
  record.variant = std::filesystem::path(snapshot_path).filename().string();
  record.device.kind = "dry";
  record.device.name = "replay of device " + std::to_string(report.device);
  record.budget.bytes = report.config.budget;
  record.budget.text = report.budget_text;
  record.scale = "snapshot";
  record.steps = 0;
  const ReplayResult& fidelity = report.fidelity;
  record.outcome.status = fidelity.fits() ? OutcomeStatus::ok : OutcomeStatus::oom;
  if (report.oom && !fidelity.fits()) {
    record.outcome.diagnosis = memory::diagnosis_name(report.oom->info.diagnosis);
    record.outcome.message = report.oom->message;
  }
  record.memory.peak_allocated = fidelity.peak_allocated;
  record.memory.peak_reserved = fidelity.peak_reserved;
  record.memory.peak_device_used = fidelity.peak_reserved;  // dry: the device holds what is reserved
  record.memory.need = report.need_allocated;
  record.memory.need_reserved = report.need_reserved;
  for (memory::Tag tag : memory::all_tags()) record.memory.per_tag_peak[memory::tag_name(tag)] = 0;
  record.memory.per_tag_peak[memory::tag_name(memory::Tag::other)] = fidelity.peak_allocated;  // a snapshot has no tags
  record.memory.num_ooms = fidelity.final_stats.num_ooms;
  record.memory.num_alloc_retries = fidelity.final_stats.num_alloc_retries;
  record.metrics["divergent_events"] = static_cast<double>(fidelity.divergent_events);
  record.metrics["requests"] = static_cast<double>(fidelity.requests);
  record.metrics["pytorch_peak_reserved"] = static_cast<double>(report.pytorch_peak_reserved);
  record.metrics["fragmentation_at_peak"] = fidelity.fragmentation_at_peak;
  if (report.budget_inferred) {
    record.metrics["budget_low"] = static_cast<double>(report.budget_range.low);
    if (report.budget_range.high) record.metrics["budget_high"] = static_cast<double>(*report.budget_range.high);
  }
  if (!report.window.whole) {  // --from/--to: the numbers above are the window's
    record.metrics["window_first_entry"] = static_cast<double>(report.window.begin_entry);
    record.metrics["window_last_entry"] = static_cast<double>(report.window.end_entry - 1);
  }
  const Growth& growth = report.iteration_growth;
  if (growth.leak) record.metrics["leak_bytes_per_iteration"] = growth.bytes_per_iteration;
  if (growth.steady && !growth.leak) record.metrics["released_growth_bytes_per_iteration"] = growth.bytes_per_iteration;
  if (!report.phases.low_bytes.empty()) {
    record.metrics["iterations"] = static_cast<double>(report.phases.low_bytes.size() + 1);
  }
  // The largest sites by name, so `compare` can follow one line of the user's code across runs.
  for (std::size_t i = 0; i < report.top_sites.size() && i < kSitesInRecord; ++i) {
    record.metrics[std::string(kTopSitePrefix) + report.top_sites[i].site] =
        static_cast<double>(report.top_sites[i].bytes);
  }
  for (const WhatIfRow& row : report.what_if) {
    const std::string key = "what_if." + (row.as_recorded ? std::string("as_recorded") : metric_key(row.setting));
    record.metrics[key + ".peak_reserved"] = static_cast<double>(row.peak_reserved);
    record.metrics[key + ".fits"] = row.fits ? 1.0 : 0.0;
  }
  record.alloc_conf = report.config.to_string();
  record.expected = report.events.ooms > 0 ? "oom" : "ok";
  record.matches_expectation = outcome_matches(record.expected, record.outcome.status) && report.reproduces_pytorch();
  record.warnings = report.notes;
  record.git_commit = git_commit();
  record.timestamp = utc_timestamp();
  record.oomlab_version = oomlab_version();
  return record;
}

}  // namespace oomlab::replay
