#include "harness/cli/results_table.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/runner/knobs.hpp"

namespace oomlab::cli {

namespace {

std::string outcome_text(const RunRecord& record) {
  const Outcome& outcome = record.outcome;
  std::string text = outcome_status_name(outcome.status);
  if (!outcome.diagnosis.empty()) text += " (" + outcome.diagnosis + ")";
  if (outcome.status == OutcomeStatus::crash && outcome.signal != 0) {
    text += " (signal " + std::to_string(outcome.signal) + ")";
  }
  if (outcome.status == OutcomeStatus::oom && outcome.step >= 0) {
    text += " @ step " + std::to_string(outcome.step);
  }
  return text;
}

std::string throughput_text(const Throughput& throughput) {
  if (throughput.unit.empty()) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.3g %s", throughput.value, throughput.unit.c_str());
  return text;
}

}  // namespace

void print_results_table(const std::vector<RunRecord>& records, std::FILE* out, TableKind kind) {
  const bool story = kind == TableKind::story;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"scenario", "variant", "device", "scale", "outcome"};
  if (story) header.insert(header.end(), {"expected", "match"});
  header.insert(header.end(), {"budget", "need", "peak alloc", "peak reserved", "throughput"});
  rows.push_back(header);
  for (const RunRecord& r : records) {
    std::vector<std::string> row = {r.scenario, r.variant, r.device.kind, r.scale, outcome_text(r)};
    if (story) row.insert(row.end(), {r.expected, r.matches_expectation ? "yes" : "NO"});
    row.insert(row.end(), {memory::format_budget(r.budget.bytes),
                           r.memory.need > 0 ? format_size(r.memory.need) : "-",
                           format_size(r.memory.peak_allocated), format_size(r.memory.peak_reserved),
                           throughput_text(r.throughput)});
    rows.push_back(row);
  }
  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
  // What the user needs to act on a failure: the knobs it ran with, the shortfall, the message
  // with its diagnosis and remedy (for an OOM) or how it failed.
  for (const RunRecord& r : records) {
    if (r.outcome.status == OutcomeStatus::ok) continue;
    std::fprintf(out, "\n%s/%s on %s/%s%s:\n", r.scenario.c_str(), r.variant.c_str(),
                 r.device.kind.c_str(), r.scale.c_str(),
                 r.knobs.empty() ? "" : (" (" + describe_knobs(r.knobs) + ")").c_str());
    if (r.memory.need > 0 && r.budget.bytes != memory::AllocatorConfig::kUnlimited &&
        r.memory.need > r.budget.bytes) {
      std::fprintf(out, "  needs %s, budget %s, short by %s\n", format_size(r.memory.need).c_str(),
                   format_size(r.budget.bytes).c_str(), format_size(r.memory.need - r.budget.bytes).c_str());
    }
    std::fprintf(out, "  %s\n", r.outcome.message.empty() ? "(no message)" : r.outcome.message.c_str());
  }
}

bool print_warnings(const std::vector<RunRecord>& records, std::FILE* out) {
  bool all_written = true;
  for (const RunRecord& r : records) {
    for (const std::string& warning : r.warnings) {
      std::fprintf(out, "oomlab: warning: %s/%s: %s\n", r.scenario.c_str(), r.variant.c_str(),
                   warning.c_str());
      all_written = all_written && warning.rfind(kTraceNotWritten, 0) != 0;
    }
  }
  return all_written;
}

}  // namespace oomlab::cli
