#include "harness/report/scenario_table.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "harness/report/chart_style.hpp"
#include "harness/report/markdown_text.hpp"
#include "harness/report/record_fields.hpp"
#include "harness/report/step_noise.hpp"

namespace oomlab::report {

namespace {

// Record fields are input: shown as text, never as Markdown or HTML (markdown_text.hpp).
std::string cell(const std::string& text) { return markdown_text(text); }

std::string budget_text(const RunRecord& r) {
  if (r.budget.bytes == std::numeric_limits<std::uint64_t>::max()) return "unlimited";
  return bytes_label(r.budget.bytes) + (r.budget.profile.empty() ? "" : " (" + cell(r.budget.profile) + ")");
}

bool is_gpu(const RunRecord& r) { return r.device.kind == "cuda" && !r.device.name.empty(); }

struct Column {
  std::string machine;  // machine_name: what tells the records apart
  std::string label;    // the heading
};

// Dry and host first (the predictions), then the GPU builds: per card, the native images before
// PTX compiled at load, the newer architecture first ("sm_90a", then "compute_80 PTX (JIT)"), so
// the columns read the same whatever order the files load in. When every GPU record names one
// card, a build's heading is its image alone.
std::vector<Column> columns_of(const std::vector<const LoadedRecord*>& records) {
  std::set<std::string> cards;
  for (const LoadedRecord* loaded : records) {
    if (is_gpu(loaded->record)) cards.insert(loaded->record.device.name);
  }
  std::vector<Column> predictions, gpus;
  std::set<std::string> seen;
  for (const LoadedRecord* loaded : records) {
    const RunRecord& r = loaded->record;
    const std::string machine = machine_name(r);
    if (!seen.insert(machine).second) continue;
    const bool short_label = is_gpu(r) && cards.size() == 1 && !r.device.image.empty();
    (is_gpu(r) ? gpus : predictions).push_back({machine, short_label ? r.device.image : machine});
  }
  const auto order = [](const Column& column) {
    const std::size_t open = column.machine.rfind(" (");
    const std::string card = open == std::string::npos ? column.machine : column.machine.substr(0, open);
    const std::string image = open == std::string::npos ? "" : column.machine.substr(open + 2);
    return std::make_tuple(card, image.rfind("sm_", 0) == 0 ? 0 : 1, image);
  };
  std::stable_sort(gpus.begin(), gpus.end(), [&](const Column& a, const Column& b) {
    const auto [card_a, native_a, image_a] = order(a);
    const auto [card_b, native_b, image_b] = order(b);
    if (card_a != card_b) return card_a < card_b;
    if (native_a != native_b) return native_a < native_b;
    return image_a > image_b;
  });
  predictions.insert(predictions.end(), gpus.begin(), gpus.end());
  return predictions;
}

struct Row {
  std::string scale, variant;
  std::vector<std::vector<const LoadedRecord*>> cells;  // per column, the records in load order
};

// The story's scale first (full, small, tiny; any other after them in the order first loaded), and
// within each the variants in the order first loaded.
std::vector<Row> rows_of(const std::vector<const LoadedRecord*>& records, const std::vector<Column>& columns) {
  std::map<std::string, std::size_t> column_of, scale_rank, variant_rank;
  for (std::size_t c = 0; c < columns.size(); ++c) column_of[columns[c].machine] = c;
  scale_rank = {{"full", 0}, {"small", 1}, {"tiny", 2}};
  for (const LoadedRecord* loaded : records) {
    scale_rank.emplace(loaded->record.scale, scale_rank.size());
    variant_rank.emplace(loaded->record.variant, variant_rank.size());
  }
  std::map<std::pair<std::size_t, std::size_t>, Row> rows;  // (scale rank, variant rank) -> row
  for (const LoadedRecord* loaded : records) {
    const RunRecord& r = loaded->record;
    Row& row = rows[{scale_rank.at(r.scale), variant_rank.at(r.variant)}];
    if (row.cells.empty()) row = Row{r.scale, r.variant, std::vector<std::vector<const LoadedRecord*>>(columns.size())};
    row.cells[column_of.at(machine_name(r))].push_back(loaded);
  }
  std::vector<Row> ordered;
  for (auto& [rank, row] : rows) ordered.push_back(std::move(row));
  return ordered;
}

std::string outcome_text(const RunRecord& r) {
  const std::string outcome = cell(describe_outcome(r.outcome));
  return r.matches_expectation ? outcome : outcome + " **(expected " + cell(r.expected) + ")**";
}

struct Measure {
  std::string name;
  std::function<std::string(const RunRecord&)> text;
};

const std::vector<Measure>& measures() {
  static const std::vector<Measure> kMeasures = {
      {"outcome", outcome_text},
      {"peak allocated", [](const RunRecord& r) { return bytes_label(r.memory.peak_allocated); }},
      {"peak reserved", [](const RunRecord& r) { return bytes_label(r.memory.peak_reserved); }},
      {"throughput", [](const RunRecord& r) { return cell(throughput_text(r)); }},
  };
  return kMeasures;
}

// A measure's column for a machine is left out when none of the table's records has a value
// there (dry measures no throughput).
bool has_values(const std::vector<Row>& rows, std::size_t column, const Measure& measure) {
  for (const Row& row : rows) {
    if (!row.cells[column].empty() && measure.text(row.cells[column].front()->record) != "-") return true;
  }
  return false;
}

bool same_peaks(const std::vector<const LoadedRecord*>& records) {
  for (const LoadedRecord* loaded : records) {
    const RunRecord& a = records.front()->record;
    const RunRecord& b = loaded->record;
    if (a.memory.peak_allocated != b.memory.peak_allocated || a.memory.peak_reserved != b.memory.peak_reserved ||
        a.outcome.status != b.outcome.status) {
      return false;
    }
  }
  return true;
}

// "dry at full scale: 7 variants have several records (sm80/suite/, suite/), their peaks the same;
// the first is shown."
std::string repeated_records_notes(const std::vector<Row>& rows, const std::vector<Column>& columns) {
  struct Repeats {
    std::size_t variants = 0;
    bool agree = true;
  };
  std::map<std::tuple<std::size_t, std::string, std::string>, Repeats> repeats;  // (column, scale, folders)
  for (const Row& row : rows) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const auto& records = row.cells[c];
      if (records.size() < 2) continue;
      std::set<std::string> folders;
      for (const LoadedRecord* loaded : records) {
        folders.insert(std::filesystem::path(loaded->file).parent_path().string() + "/");
      }
      std::string folder_list;
      for (const std::string& folder : folders) folder_list += (folder_list.empty() ? "" : ", ") + folder;
      Repeats& r = repeats[{c, row.scale, folder_list}];
      ++r.variants;
      r.agree = r.agree && same_peaks(records);
    }
  }
  std::string notes;
  for (const auto& [key, r] : repeats) {
    const auto& [column, scale, folders] = key;
    notes += "> " + cell(columns[column].label) + " at " + cell(scale) + " scale: " + std::to_string(r.variants) +
             (r.variants == 1 ? " variant has" : " variants have") + " several records (" + cell(folders) + "), " +
             (r.agree ? "their peaks the same" : "**their peaks differ** (oomlab compare shows how)") +
             "; the first is shown.\n\n";
  }
  return notes;
}

}  // namespace

std::string machine_name(const RunRecord& r) {
  if (!is_gpu(r)) return r.device.kind;
  return r.device.image.empty() ? r.device.name : r.device.name + " (" + r.device.image + ")";
}

std::string scenario_table(const std::vector<const LoadedRecord*>& records) {
  const std::vector<Column> columns = columns_of(records);
  const std::vector<Row> rows = rows_of(records, columns);
  std::vector<std::pair<const Measure*, std::size_t>> shown;  // (measure, column)
  for (const Measure& measure : measures()) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (has_values(rows, c, measure)) shown.emplace_back(&measure, c);
    }
  }
  std::string out = "| variant | scale | budget |";
  std::string rule = "|---|---|---|";
  for (const auto& [measure, c] : shown) {
    out += " " + measure->name + ": " + cell(columns[c].label) + " |";
    rule += measure->name == "outcome" ? "---|" : "---:|";
  }
  out += "\n" + rule + "\n";
  bool empty_cells = false;
  for (const Row& row : rows) {
    const LoadedRecord* first = nullptr;
    for (const auto& records : row.cells) {
      if (!first && !records.empty()) first = records.front();
    }
    out += "| " + cell(row.variant) + " | " + cell(row.scale) + " | " + budget_text(first->record) + " |";
    for (const auto& [measure, c] : shown) {
      const auto& records = row.cells[c];
      empty_cells = empty_cells || records.empty();
      out += records.empty() ? " |" : " " + measure->text(records.front()->record) + " |";
    }
    out += "\n";
  }
  out += "\n";
  if (empty_cells) out += "An empty cell: that machine did not run the variant at that scale.\n\n";
  return out + repeated_records_notes(rows, columns);
}

}  // namespace oomlab::report
