#include "harness/report/comparison_print.hpp"

#include <map>

#include "harness/memory/user_text.hpp"
#include "harness/report/number_format.hpp"
#include "harness/report/text_table.hpp"

namespace oomlab::report {

namespace {

using Json = nlohmann::ordered_json;

const char* colour_of(Verdict verdict) {
  switch (verdict) {
    case Verdict::worse:
    case Verdict::differs: return "1;31";  // bold red
    case Verdict::better: return "32";     // green
    case Verdict::changed: return "33";    // yellow
    case Verdict::same: return "";
  }
  return "";
}

std::string threshold_text(double threshold) { return format_number(100 * threshold, 3) + "%"; }

// Names and texts come from the files compared: on a terminal a raw ESC would drive it and a CR
// or LF forge a line, so every one is shown with its control bytes escaped.
std::string shown(const std::string& text) { return printable_text(text); }

// "srgan_leak/broken throughput 0.958x" for the verdict line.
std::string finding(const ComparisonRow& row) {
  std::string text = shown(row.item) + " " + shown(row.metric);
  if (row.ratio) {
    text += " " + format_ratio(*row.ratio);
  } else if (!row.delta_text.empty()) {
    text += " " + shown(row.delta_text);
  } else {
    text += " " + shown(row.a_text) + " -> " + shown(row.b_text);
  }
  return text;
}

std::string findings(const Comparison& comparison, Verdict verdict) {
  std::string text;
  std::size_t listed = 0;
  for (const ComparisonRow& row : comparison.rows) {
    if (row.verdict != verdict) continue;
    if (listed++ == 3) {
      text += ", ...";
      break;
    }
    text += (text.empty() ? "" : ", ") + finding(row);
  }
  return text;
}

// "only in A (cuda/small): fragmentation/broken, gpt_train/bf16": one line per setting.
std::string unmatched_lines(const char* side, const std::vector<Comparison::Unmatched>& unmatched) {
  std::vector<std::pair<std::string, std::string>> lines;  // (setting, items)
  std::map<std::string, std::size_t> line_of;  // by setting: linear in thousands of records
  for (const Comparison::Unmatched& u : unmatched) {
    auto [it, added] = line_of.emplace(u.setting, lines.size());
    if (added) {
      lines.emplace_back(shown(u.setting), shown(u.item));
    } else {
      lines[it->second].second += ", " + shown(u.item);
    }
  }
  std::string out;
  for (const auto& [setting, items] : lines)
    out += std::string("only in ") + side + " (" + setting + "): " + items + "\n";
  return out;
}

Json unmatched_json(const std::vector<Comparison::Unmatched>& unmatched) {
  Json list = Json::array();
  for (const Comparison::Unmatched& u : unmatched) list.push_back({{"item", u.item}, {"setting", u.setting}});
  return list;
}

Json number_or_null(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }
Json noise_or_null(double noise) { return noise >= 0 ? Json(noise) : Json(nullptr); }

}  // namespace

std::string verdict_line(const Comparison& c) {
  std::string counts;
  for (Verdict verdict : {Verdict::worse, Verdict::differs, Verdict::better, Verdict::changed, Verdict::same}) {
    const std::size_t n = c.count(verdict);
    if (n == 0) continue;
    counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + verdict_name(verdict);
    if (verdict == Verdict::worse || verdict == Verdict::differs) counts += " (" + findings(c, verdict) + ")";
  }
  if (!c.only_a.empty()) counts += ", " + std::to_string(c.only_a.size()) + " only in A";
  if (!c.only_b.empty()) counts += ", " + std::to_string(c.only_b.size()) + " only in B";
  return std::string(c.regression() ? "regression: " : "no regression: ") + counts + "; threshold " +
         threshold_text(c.threshold);
}

std::string comparison_text(const Comparison& c, const PrintOptions& options) {
  std::string out = "A: " + shown(c.a_source) + " - " + shown(c.a_description) + "\n" + "B: " + shown(c.b_source) +
                    " - " + shown(c.b_description) + "\n";
  for (const std::string& note : c.notes) out += "note: " + shown(note) + "\n";
  using Align = TextTable::Align;
  TextTable table({"variant", "setting", "metric", "A", "B", "delta", "B/A", "verdict"},
                  {Align::left, Align::left, Align::left, Align::right, Align::right, Align::right, Align::right,
                   Align::left});
  std::string last_group;
  std::size_t hidden = 0;
  for (const ComparisonRow& row : c.rows) {
    if (row.verdict == Verdict::same && !options.all_rows) {
      ++hidden;
      continue;
    }
    // The variant and its setting once per group of rows, as a reader scans them.
    const std::string group = row.item + "\n" + row.setting;
    const bool first = group != last_group;
    last_group = group;
    table.add_row({first ? shown(row.item) : "", first ? shown(row.setting) : "", shown(row.metric), shown(row.a_text),
                   shown(row.b_text), shown(row.delta_text), row.ratio ? format_ratio(*row.ratio) : "",
                   verdict_name(row.verdict)});
    if (options.colour) table.colour_last(7, colour_of(row.verdict));
  }
  out += "\n";
  if (!table.empty()) out += table.render();
  if (hidden > 0) {
    out += std::to_string(hidden) + " row" + (hidden == 1 ? "" : "s") + " the same within " +
           threshold_text(c.threshold) + " (or the noise) not shown; --all shows them\n";
  }
  out += unmatched_lines("A", c.only_a);
  out += unmatched_lines("B", c.only_b);
  std::string verdict = verdict_line(c);
  if (options.colour) verdict = std::string("\x1b[") + (c.regression() ? "1;31" : "1;32") + "m" + verdict + "\x1b[0m";
  return out + verdict + "\n";
}

Json comparison_json(const Comparison& c) {
  Json rows = Json::array();
  for (const ComparisonRow& row : c.rows) {
    rows.push_back({{"item", row.item},
                    {"setting", row.setting},
                    {"metric", row.metric},
                    {"unit", row.unit},
                    {"a", number_or_null(row.a)},
                    {"b", number_or_null(row.b)},
                    {"a_text", row.a_text},
                    {"b_text", row.b_text},
                    {"delta", row.delta_text},
                    {"ratio", number_or_null(row.ratio)},
                    {"noise_a", noise_or_null(row.noise_a)},
                    {"noise_b", noise_or_null(row.noise_b)},
                    {"verdict", verdict_name(row.verdict)}});
  }
  Json counts = Json::object();
  for (Verdict verdict : {Verdict::same, Verdict::better, Verdict::worse, Verdict::changed, Verdict::differs}) {
    counts[verdict_name(verdict)] = c.count(verdict);
  }
  return {{"a", {{"source", c.a_source}, {"holds", c.a_description}}},
          {"b", {{"source", c.b_source}, {"holds", c.b_description}}},
          {"threshold", c.threshold},
          {"rows", rows},
          {"only_in_a", unmatched_json(c.only_a)},
          {"only_in_b", unmatched_json(c.only_b)},
          {"notes", c.notes},
          {"counts", counts},
          {"regression", c.regression()},
          {"verdict", verdict_line(c)}};
}

}  // namespace oomlab::report
