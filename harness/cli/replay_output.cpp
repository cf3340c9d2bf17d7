#include "harness/cli/replay_output.hpp"

#include <cstdio>
#include <string>

#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/user_text.hpp"
#include "harness/replay/replay_report_verdict.hpp"
#include "harness/report/text_table.hpp"
#include "harness/runner/json_text.hpp"

namespace oomlab::cli {
namespace {

using Json = nlohmann::ordered_json;
using replay::ReplayReport;

// The snapshot's own text (frame file names and functions, the path, notes that quote it) is
// data from outside: its control bytes are escaped (printable_text) before a terminal sees them.
std::string shown(const std::string& text) { return printable_text(text); }

std::string percent(std::uint64_t part, std::uint64_t whole) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%",
                whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return text;
}

std::string fraction(double value) {
  char text[16];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

std::string plural(std::size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string header(const ReplayReport& report, const std::string& path) {
  const replay::DeviceEvents& e = report.events;
  std::string text = "oomlab replay " + shown(path) + ": device " + std::to_string(report.device) + ", " +
                     plural(e.allocs, "alloc") + ", " + plural(e.frees, "free") + ", " + plural(e.ooms, "oom") +
                     ", " + std::to_string(e.empty_caches) + " empty_cache()\n";
  text += "  settings  " + report.config.to_string() + " (" + report.settings.origin + ")\n";
  text += "  budget    " + report.budget_text + "\n";
  if (!report.window.whole) {
    text += "  window    " + report.window.text + ": replayed from the trace's start (fidelity counts every " +
            "request replayed); the counts, peaks, sites, phases and what-ifs are the window's\n";
  }
  return text;
}

// Memory by pool, when a private pool (CUDA graphs, MemPool) held any: PyTorch's OOM message
// counts those bytes as "reserved by PyTorch" without saying whose they are.
std::string pools(const ReplayReport& report) {
  if (report.fidelity.pools.empty()) return "";
  std::string text = "pools     ";
  for (const replay::PoolUsage& pool : report.fidelity.pools) {
    text += (&pool == &report.fidelity.pools.front() ? "" : "; ") + pool.name + ": peak " +
            format_size(pool.peak_reserved) + " reserved, " + format_size(pool.peak_allocated) + " allocated";
  }
  return text + "\n";
}

Json pools_json(const ReplayReport& report) {
  Json rows = Json::array();
  for (const replay::PoolUsage& pool : report.fidelity.pools) {
    rows.push_back({{"pool", pool.name}, {"peak_reserved", pool.peak_reserved}, {"peak_allocated", pool.peak_allocated},
                    {"reserved_at_end", pool.reserved_at_end}, {"allocated_at_end", pool.allocated_at_end}});
  }
  return rows;
}

std::string fidelity(const ReplayReport& report) {
  const replay::ReplayResult& r = report.fidelity;
  std::string text = "\nfidelity  " + plural(r.divergent_events, "divergent event") + " in " +
                     plural(r.requests, "request");
  const std::string peaks = "reserved peak " + format_size(r.peak_reserved);
  if (report.reproduces_pytorch()) {
    text += "; " + peaks + (report.pytorch_reserved_at_start == 0 ? " = PyTorch's" : "") + "\n";
  } else {
    text += "; " + peaks + ", PyTorch's " + format_size(report.pytorch_peak_reserved) + "\n";
  }
  if (r.first_divergence) {
    const replay::Divergence& d = *r.first_divergence;
    text += "  first divergent event " + std::to_string(d.event) + " (trace entry " + std::to_string(d.trace_index) +
            "): " + shown(d.request) + "\n";
    text += "    PyTorch: " + shown(d.pytorch) + "\n";
    text += "    oomlab:  " + shown(d.oomlab) + "\n";
  }
  return text + pools(report);
}

std::string oom(const ReplayReport& report) {
  if (!report.oom) return "";
  const replay::OomFinding& f = *report.oom;
  std::string text = "\nout of memory  " + shown(f.request);
  text += f.pytorch_failed_too ? (report.fidelity.fits() ? "\n" : ", reproduced\n") : " (PyTorch did not fail here)\n";
  // The site (the user's own line) first when library frames come before it in the stack.
  if (f.frames.empty() || f.frames.front() != f.site) text += "  site " + shown(f.site) + "\n";
  for (std::size_t i = 0; i < f.frames.size(); ++i) text += (i == 0 ? "  at " : "     ") + shown(f.frames[i]) + "\n";
  text += "  " + shown(f.message) + "\n";
  return text;
}

std::string sites(const ReplayReport& report) {
  if (report.top_sites.empty()) return "";
  std::string text = "\nlive at the peak  " + format_size(report.live_at_peak) + ", by allocation site:\n";
  report::TextTable table({"live", "share", "blocks", "site"},
                          {report::TextTable::Align::right, report::TextTable::Align::right,
                           report::TextTable::Align::right, report::TextTable::Align::left});
  for (const replay::SiteBytes& site : report.top_sites) {
    table.add_row({format_size(site.bytes), percent(site.bytes, report.live_at_peak), std::to_string(site.blocks),
                   shown(site.site)});
  }
  return text + table.render();
}

std::string phases(const ReplayReport& report) {
  std::string text = "\nphases  " + report.phases.describe();
  const replay::Growth& growth = report.iteration_growth;
  if (growth.leak) {
    text += "\n  leak: " + shown(replay::describe_growth(growth)) + "; never released while the program ran";
  } else if (growth.steady && growth.stopped_at) {
    text += "\n  not a leak: " + shown(replay::describe_growth(growth)) + ", then stopped after request " +
            std::to_string(growth.stopped_request) + " while the program ran on: state made once in its first "
            "steps (optimizer state allocated lazily, a CUDA graph's pool), not growth that goes on";
  } else if (growth.steady) {
    text += "\n  not a leak: " + shown(replay::describe_growth(growth)) + ", released after request " +
            std::to_string(growth.released_request) + " (back to the first iteration's level) while the program "
            "still held its earlier memory: memory grown by design (a KV cache, a growing buffer)";
  } else if (report.growth.enough_samples) {
    text += "; no steady growth between iterations";
  }
  return text + "\n";
}

std::string what_if(const ReplayReport& report) {
  if (report.what_if.empty()) return "";
  std::string text = "\nwhat if (budget " + memory::format_budget(report.config.budget) + ")\n";
  report::TextTable table({"setting", "reserved peak", "fits?", "fragmentation at peak"},
                          {report::TextTable::Align::left, report::TextTable::Align::right,
                           report::TextTable::Align::left, report::TextTable::Align::right});
  const std::string largest = report.budget_range.high ? format_size(*report.budget_range.high) : "";
  for (const replay::WhatIfRow& row : report.what_if) {
    const std::string setting = row.as_recorded ? "as recorded (" + row.alloc_conf + ")" : row.setting;
    std::string fits = row.fits ? "yes" : "no (" + plural(row.failed_requests, "failed request") + ")";
    if (!row.fits && row.fits_at_largest_cap.value_or(false)) fits = "only at a cap near " + largest;
    table.add_row({setting, format_size(row.peak_reserved), fits, fraction(row.fragmentation_at_peak)});
  }
  text += table.render();
  return text + shown(replay::what_if_verdict(report)) + "\n";
}

std::string notes(const ReplayReport& report) {
  if (report.notes.empty()) return "";
  std::string text = "\nnotes\n";
  for (const std::string& note : report.notes) text += "  - " + shown(note) + "\n";
  return text;
}

Json growth_json(const replay::Growth& growth) {
  if (!growth.steady) return nullptr;
  return {{"bytes_per_iteration", growth.bytes_per_iteration}, {"iterations", growth.iterations},
          {"site", growth.site}, {"site_growth", growth.site_growth}, {"leak", growth.leak},
          {"released_after_request", growth.released_at ? Json(growth.released_request) : Json(nullptr)},
          {"stopped_after_request", growth.stopped_at ? Json(growth.stopped_request) : Json(nullptr)}};
}

Json what_if_json(const ReplayReport& report) {
  Json rows = Json::array();
  for (const replay::WhatIfRow& row : report.what_if) {
    rows.push_back({{"setting", row.as_recorded ? "as recorded" : row.setting},
                    {"alloc_conf", row.alloc_conf},
                    {"budget", row.budget},
                    {"peak_reserved", row.peak_reserved},
                    {"peak_allocated", row.peak_allocated},
                    {"fits", row.fits},
                    {"fits_at_largest_cap", row.fits_at_largest_cap ? Json(*row.fits_at_largest_cap) : Json(nullptr)},
                    {"failed_requests", row.failed_requests},
                    {"fragmentation_at_peak", row.fragmentation_at_peak}});
  }
  return rows;
}

}  // namespace

std::string replay_json_text(const ReplayReport& report, const std::string& snapshot_path) {
  // Bytes that are not UTF-8 (a snapshot path from a non-UTF-8 file system) become U+FFFD.
  return json_text(replay_json(report, snapshot_path), 2) + "\n";
}

std::string replay_text(const ReplayReport& report, const std::string& snapshot_path) {
  return header(report, snapshot_path) + fidelity(report) + oom(report) + sites(report) + phases(report) +
         what_if(report) + notes(report);
}

Json replay_json(const ReplayReport& report, const std::string& snapshot_path) {
  const replay::ReplayResult& r = report.fidelity;
  Json json;
  json["snapshot"] = snapshot_path;
  json["device"] = report.device;
  json["requests"] = {{"allocs", report.events.allocs}, {"frees", report.events.frees},
                      {"ooms", report.events.ooms}, {"empty_caches", report.events.empty_caches}};
  json["settings"] = {{"alloc_conf", report.config.to_string()}, {"origin", report.settings.origin}};
  json["budget"] = {{"bytes", report.config.budget}, {"text", report.budget_text}, {"inferred", report.budget_inferred},
                    {"low", report.budget_range.low},
                    {"high", report.budget_range.high ? Json(*report.budget_range.high) : Json(nullptr)}};
  Json divergence = nullptr;
  if (r.first_divergence) {
    divergence = {{"event", r.first_divergence->event}, {"trace_index", r.first_divergence->trace_index},
                  {"request", r.first_divergence->request}, {"pytorch", r.first_divergence->pytorch},
                  {"oomlab", r.first_divergence->oomlab}};
  }
  json["fidelity"] = {{"divergent_events", r.divergent_events}, {"requests", r.requests},
                      {"reproduces_pytorch", report.reproduces_pytorch()}, {"peak_reserved", r.peak_reserved},
                      {"pytorch_peak_reserved", report.pytorch_peak_reserved}, {"first_divergence", divergence},
                      {"pools", pools_json(report)}};
  json["need"] = {{"allocated", report.need_allocated}, {"reserved", report.need_reserved}};
  json["window"] = report.window.whole ? Json(nullptr)
                                       : Json{{"first_entry", report.window.begin_entry},
                                              {"last_entry", report.window.end_entry - 1},
                                              {"text", report.window.text}};
  Json oom = nullptr;
  if (report.oom) {
    oom = {{"event", report.oom->event}, {"request", report.oom->request}, {"site", report.oom->site},
           {"frames", report.oom->frames},
           {"reproduced", report.oom->pytorch_failed_too && !r.fits()},
           {"diagnosis", memory::diagnosis_name(report.oom->info.diagnosis)},
           {"remedy", report.oom->info.remedy}, {"message", report.oom->message}};
  }
  json["oom"] = oom;
  Json sites = Json::array();
  for (const replay::SiteBytes& site : report.top_sites) {
    sites.push_back({{"site", site.site}, {"bytes", site.bytes}, {"blocks", site.blocks}});
  }
  json["live_at_peak"] = {{"bytes", report.live_at_peak}, {"sites", sites}};
  json["phases"] = {{"boundaries", report.phases.boundaries.size()},
                    {"from_snapshot_marks", report.phases.from_snapshot_marks},
                    {"levels", report.phases.low_bytes},
                    {"leak", report.iteration_growth.leak},
                    {"leak_bytes_per_iteration",
                     report.iteration_growth.leak ? Json(report.iteration_growth.bytes_per_iteration) : Json(nullptr)},
                    {"growth", growth_json(report.iteration_growth)}};
  json["what_if"] = what_if_json(report);
  json["verdict"] = report.what_if.empty() ? Json(nullptr) : Json(replay::what_if_verdict(report));
  json["notes"] = report.notes;
  return json;
}

}  // namespace oomlab::cli
