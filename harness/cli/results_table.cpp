#include "harness/cli/results_table.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "harness/memory/size.hpp"

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

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

void print_results_table(const std::vector<RunRecord>& records, std::FILE* out) {
  constexpr std::size_t kColumns = 10;
  using Row = std::array<std::string, kColumns>;
  std::vector<Row> rows = {{"scenario", "variant", "device", "scale", "outcome", "expected",
                            "match", "peak alloc", "peak reserved", "throughput"}};
  for (const RunRecord& r : records) {
    rows.push_back({r.scenario, r.variant, r.device.kind, r.scale, outcome_text(r),
                    r.expected.c_str(), r.matches_expectation ? "yes" : "NO",
                    format_size(r.memory.peak_allocated), format_size(r.memory.peak_reserved),
                    throughput_text(r.throughput)});
  }
  std::array<std::size_t, kColumns> width{};
  for (const Row& row : rows) {
    for (std::size_t c = 0; c < kColumns; ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const Row& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < kColumns; ++c) {
      line += row[c];
      if (c + 1 < kColumns) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
  for (const RunRecord& r : records) {
    if (r.outcome.status == OutcomeStatus::crash || r.outcome.status == OutcomeStatus::error) {
      std::fprintf(out, "%s/%s on %s: %s\n", r.scenario.c_str(), r.variant.c_str(),
                   r.device.kind.c_str(), first_line(r.outcome.message).c_str());
    }
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
