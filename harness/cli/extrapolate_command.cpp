// oomlab extrapolate A.pickle B.pickle [C.pickle] --knob batch=1,2[,4] --at 32: the user's own
// program at a batch (or sequence length) it never ran, from snapshots recorded at small ones
// (harness/extrapolate): aligned, fitted, synthesised and replayed as `oomlab replay` does. With
// --bisect, the largest value that fits --budget. Prints and parses only.
#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "harness/cli/commands.hpp"
#include "harness/extrapolate/extrapolate_record.hpp"
#include "harness/extrapolate/extrapolation.hpp"
#include "harness/extrapolate/prediction.hpp"
#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/user_text.hpp"
#include "harness/replay/snapshot_file.hpp"
#include "harness/report/text_table.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/json_text.hpp"

namespace oomlab::cli {

struct ExtrapolateCliOptions {
  std::vector<std::string> snapshots;  // recorded at the --knob values, in order
  std::string knob;                    // "batch=1,2,4"
  std::string at;                      // the value to predict at; empty with --bisect
  std::string fit = "auto";            // auto | affine | quadratic
  bool bisect = false;                 // the largest value that fits --budget
  std::string budget;                  // empty: unlimited
  std::string alloc_conf;              // over the reference snapshot's settings
  std::string out_path;                // the prediction's run record
  int device = -1;                     // -1: the device with the most allocs
  bool what_if = false;
  bool json = false;
};

namespace {

using Json = nlohmann::ordered_json;
using extrapolate::Extrapolation;
using extrapolate::Prediction;

constexpr std::size_t kUnfittedShown = 20;

std::string shown(const std::string& text) { return printable_text(text); }

std::string plural(std::size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string at_value(const Extrapolation& model, std::int64_t value) {
  return model.knob.name + "=" + std::to_string(value);
}

extrapolate::FitMode fit_mode(const std::string& text) {
  if (text == "auto") return extrapolate::FitMode::automatic;
  if (text == "affine") return extrapolate::FitMode::affine;
  if (text == "quadratic") return extrapolate::FitMode::quadratic;
  throw UsageError("--fit " + quote_user_text(text, 30) + ": expected auto, affine or quadratic");
}

// Every input checked before any snapshot is read: a bad option costs no decode.
void check_options(const ExtrapolateCliOptions& options) {
  if (options.snapshots.size() < 2) {
    throw UsageError("give two or more snapshots recorded at different values of one knob (A.pickle B.pickle "
                     "[C.pickle] --knob batch=1,2[,4])");
  }
  if (options.bisect == !options.at.empty())
    throw UsageError("give --at VALUE (a prediction) or --bisect (the largest that fits)");
  if (options.bisect && options.budget.empty()) {
    throw UsageError("--bisect needs --budget: a size (12GiB) or a card (rtx3060-12g; see `oomlab list --profiles`)");
  }
  if (fit_mode(options.fit) == extrapolate::FitMode::quadratic && options.snapshots.size() < 3) {
    throw UsageError("--fit quadratic needs three snapshots (three points determine a quadratic)");
  }
  if (!options.budget.empty()) memory::parse_budget(options.budget);  // one line on a bad one
  if (!options.out_path.empty()) require_writable("--out", options.out_path);
}

Extrapolation load(const ExtrapolateCliOptions& options) {
  const extrapolate::KnobPoints knob = extrapolate::parse_knob_points(options.knob, options.snapshots.size());
  std::vector<extrapolate::ProgramTrace> traces;
  for (std::size_t i = 0; i < options.snapshots.size(); ++i) {
    traces.push_back(extrapolate::program_trace(options.snapshots[i], knob.values[i],
                                                replay::load_snapshot(options.snapshots[i]), options.device));
  }
  return extrapolate::extrapolation(knob, std::move(traces), fit_mode(options.fit));
}

std::string kind_of(const Extrapolation& model, const Prediction& prediction) {
  if (model.estimated()) return "an estimate (some sizes fit no polynomial: listed below)";
  if (model.private_pools) return "an estimate (private pools replayed as the default pool: see the note)";
  return prediction.exact() && model.exact() ? "exact" : "exact without the left-out requests, and a bound with them";
}

std::string header(const Extrapolation& model, const extrapolate::ReplaySetup& setup) {
  std::string values, files;
  for (const extrapolate::ProgramTrace& trace : model.traces) {
    values += (values.empty() ? "" : ",") + std::to_string(trace.knob);
    files += (files.empty() ? "" : ", ") + shown(trace.file);
  }
  const extrapolate::ProgramTrace& ref = model.reference_trace();
  std::string text = "oomlab extrapolate " + model.knob.name + "=" + values + " (" + files + "), device " +
                     std::to_string(ref.events.device) + "\n";
  text += "  requests  " + plural(model.allocs, "alloc") + " in " + shown(ref.file) + " (" +
          at_value(model, ref.knob) + ", the reference): " + std::to_string(model.fitted) + " fitted exactly";
  if (model.fitted_quadratic > 0) text += " (" + std::to_string(model.fitted_quadratic) + " quadratic)";
  text += ", " + std::to_string(model.checked) + " of them checked by a further recording\n";
  if (model.workspaces > 0) {
    text += "  left out " + plural(model.workspaces, "library workspace") + " of " + shown(ref.file) +
            " (asked for in library code, freed within " + std::to_string(extrapolate::kWorkspaceWindow) +
            " requests or before the op that asked ended) that the other recordings lack or size otherwise\n";
  }
  for (std::size_t t = 0; t < model.traces.size(); ++t) {
    if (model.extra_requests[t] == 0) continue;
    text += "  extra     " + shown(model.traces[t].file) + " (" + at_value(model, model.traces[t].knob) + ") makes " +
            plural(model.extra_requests[t], "more request") +
            ", none from the program's own code (library workspaces)\n";
  }
  text += "  settings  " + setup.config.to_string() + " (" + shown(setup.origin) + ")\n";
  return text + "  budget    " + shown(setup.budget_text) + "\n";
}

std::string prediction_text(const Extrapolation& model, const Prediction& p) {
  std::string text = "\nprediction at " + at_value(model, p.at) + ": " + kind_of(model, p) + "\n";
  text += "  allocated peak  " + format_size(p.result.peak_allocated) + " (" + std::to_string(p.result.peak_allocated) +
          " B)\n";
  text += "  reserved peak   " + format_size(p.result.peak_reserved) + " (" + std::to_string(p.result.peak_reserved) +
          " B)\n";
  if (!p.result.fits()) {
    text += "  need            " + format_size(p.need_allocated) + " allocated, " + format_size(p.need_reserved) +
            " reserved with no cap\n";
  }
  if (!p.exact()) {
    text += "  with the left-out requests: " + std::string(p.result.fits() ? "" : "the need is ") +
            "allocated at most " + format_size(p.allocated_bound()) + ", reserved at most " +
            format_size(p.reserved_bound()) + " (they held at most " + format_size(p.bound_bytes) +
            " at once, scaled from the recordings by " + model.knob.name +
            " / recorded value; assumes a workspace grows no faster than the " + model.knob.name + ")\n";
  }
  text += "  outcome         " + std::string(p.result.fits() ? "fits" : "out of memory") + " under " +
          memory::format_budget(p.setup.config.budget) + "\n";
  if (p.oom) {
    const replay::OomFinding& f = *p.oom;
    text += "\nout of memory  " + shown(f.request) + "\n";
    if (f.frames.empty() || f.frames.front() != f.site) text += "  site " + shown(f.site) + "\n";
    for (std::size_t i = 0; i < f.frames.size(); ++i) text += (i == 0 ? "  at " : "     ") + shown(f.frames[i]) + "\n";
    text += "  " + shown(f.message) + "\n";
  }
  if (!p.top_sites.empty()) {
    text += "\nlive at the peak  " + format_size(p.result.peak_allocated) + ", by allocation site:\n";
    report::TextTable table(
        {"live", "blocks", "site"},
        {report::TextTable::Align::right, report::TextTable::Align::right, report::TextTable::Align::left});
    for (const replay::SiteBytes& site : p.top_sites) {
      table.add_row({format_size(site.bytes), std::to_string(site.blocks), shown(site.site)});
    }
    text += table.render();
  }
  if (!p.what_if.empty()) {
    text += "\nwhat if (budget " + memory::format_budget(p.setup.config.budget) + ")\n";
    report::TextTable table(
        {"setting", "reserved peak", "fits?"},
        {report::TextTable::Align::left, report::TextTable::Align::right, report::TextTable::Align::left});
    for (const replay::WhatIfRow& row : p.what_if) {
      table.add_row({row.as_recorded ? "as recorded (" + row.alloc_conf + ")" : row.setting,
                     format_size(row.peak_reserved),
                     row.fits ? "yes" : "no (" + plural(row.failed_requests, "failed request") + ")"});
    }
    text += table.render();
  }
  return text;
}

std::string unfitted_text(const Extrapolation& model) {
  if (model.unfitted.empty()) return "";
  std::string text = "\nnot fitted (" + std::to_string(model.unfitted.size()) + "):\n";
  for (std::size_t i = 0; i < model.unfitted.size() && i < kUnfittedShown; ++i) {
    const extrapolate::UnfittedRequest& u = model.unfitted[i];
    text += "  request " + std::to_string(u.request) + "  " + shown(u.site) + ": " + shown(u.what) + "\n";
  }
  if (model.unfitted.size() > kUnfittedShown) {
    text += "  ... " + std::to_string(model.unfitted.size() - kUnfittedShown) + " more (--json lists them all)\n";
  }
  return text;
}

std::string notes_text(const Extrapolation& model, const Prediction* p) {
  std::vector<std::string> notes = model.notes;
  if (p != nullptr) notes.insert(notes.end(), p->setup.notes.begin(), p->setup.notes.end());
  if (notes.empty()) return "";
  std::string text = "\nnotes\n";
  for (const std::string& note : notes) text += "  - " + shown(note) + "\n";
  return text;
}

Json prediction_json(const Extrapolation& model, const Prediction& p) {
  Json json;
  json["at"] = p.at;
  json["kind"] =
      model.estimated() || model.private_pools ? "estimate" : (p.exact() && model.exact() ? "exact" : "bound");
  json["settings"] = p.setup.config.to_string();
  json["budget"] = {{"bytes", p.setup.config.budget}, {"text", p.setup.budget_text}};
  json["outcome"] = p.result.fits() ? "ok" : "oom";
  json["peak_allocated"] = p.result.peak_allocated;
  json["peak_reserved"] = p.result.peak_reserved;
  json["need_allocated"] = p.need_allocated;
  json["need_reserved"] = p.need_reserved;
  json["bound_bytes"] = p.bound_bytes;
  json["allocated_bound"] = p.allocated_bound();
  json["reserved_bound"] = p.reserved_bound();
  json["oom"] = nullptr;
  if (p.oom) {
    json["oom"] = {{"request", p.oom->request}, {"site", p.oom->site}, {"frames", p.oom->frames},
                   {"diagnosis", memory::diagnosis_name(p.oom->info.diagnosis)}, {"message", p.oom->message}};
  }
  Json sites = Json::array();
  for (const replay::SiteBytes& site : p.top_sites) {
    sites.push_back({{"site", site.site}, {"bytes", site.bytes}, {"blocks", site.blocks}});
  }
  json["top_sites"] = sites;
  Json rows = Json::array();
  for (const replay::WhatIfRow& row : p.what_if) {
    rows.push_back({{"setting", row.as_recorded ? "as recorded" : row.setting}, {"alloc_conf", row.alloc_conf},
                    {"peak_reserved", row.peak_reserved}, {"peak_allocated", row.peak_allocated}, {"fits", row.fits},
                    {"failed_requests", row.failed_requests}});
  }
  json["what_if"] = rows;
  return json;
}

Json model_json(const Extrapolation& model) {
  Json json;
  Json recordings = Json::array();
  for (std::size_t t = 0; t < model.traces.size(); ++t) {
    recordings.push_back({{"file", model.traces[t].file}, {"value", model.traces[t].knob},
                          {"requests", model.traces[t].requests.size()}, {"extra_requests", model.extra_requests[t]},
                          {"left_out_live_bytes", model.left_out_live_bytes[t]}});
  }
  json["knob"] = model.knob.name;
  json["recordings"] = recordings;
  json["reference"] = model.reference_trace().file;
  json["allocs"] = model.allocs;
  json["fitted"] = model.fitted;
  json["fitted_quadratic"] = model.fitted_quadratic;
  json["checked"] = model.checked;
  json["workspaces"] = model.workspaces;
  Json unfitted = Json::array();
  for (const extrapolate::UnfittedRequest& u : model.unfitted) {
    unfitted.push_back({{"request", u.request}, {"site", u.site}, {"what", u.what}, {"left_out", u.left_out}});
  }
  json["unfitted"] = unfitted;
  return json;
}

void write_record(const ExtrapolateCliOptions& options, const Extrapolation& model, const Prediction& prediction) {
  if (options.out_path.empty()) return;
  try {
    write_file_atomically(options.out_path,
                          json_text(to_json(extrapolate::extrapolation_record(model, prediction)), 2) + "\n");
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string("--out: ") + e.what());
  }
}

int run(const ExtrapolateCliOptions& options) {
  check_options(options);
  const Extrapolation model = load(options);
  extrapolate::PredictionSettings settings;
  settings.budget = options.budget;
  settings.alloc_conf = options.alloc_conf;
  settings.what_if = options.what_if;
  Json json;
  json["extrapolation"] = model_json(model);
  std::string text = header(model, extrapolate::replay_setup(model, settings));
  std::optional<std::int64_t> at;
  int exit_code = 0;
  if (options.bisect) {
    const extrapolate::BisectAnswer answer = extrapolate::bisect(model, settings);
    json["bisect"] = {
        {"budget", options.budget},
        {"largest", answer.largest ? Json(*answer.largest) : Json(nullptr)},
        {"unbounded", answer.unbounded},
        {"largest_within_bound", answer.largest_within_bound ? Json(*answer.largest_within_bound) : Json(nullptr)},
        {"replays", answer.replays}};
    text += "\nbisect  ";
    if (!answer.largest) {
      text += "nothing fits " + shown(options.budget) + ", not even " + at_value(model, 1) + "\n";
      exit_code = 1;
    } else {
      text += "the largest " + model.knob.name + " that fits " + shown(options.budget) + ": " +
              std::to_string(*answer.largest) +
              (answer.unbounded ? " (the search's limit: nothing grows enough)" : "") + " (" +
              plural(answer.replays, "replay") + ")\n";
      if (answer.largest_within_bound) {
        text += "        with the left-out requests' bound: " + std::to_string(*answer.largest_within_bound) + "\n";
      }
      at = answer.largest;
    }
  } else {
    at = extrapolate::parse_knob_value(options.at, "--at");
  }
  if (at) {
    const Prediction prediction = extrapolate::predict(model, *at, settings);
    json["prediction"] = prediction_json(model, prediction);
    text += prediction_text(model, prediction) + unfitted_text(model) + notes_text(model, &prediction);
    write_record(options, model, prediction);
  } else {
    text += unfitted_text(model) + notes_text(model, nullptr);
  }
  json["notes"] = model.notes;
  std::fputs(options.json ? (json_text(json, 2) + "\n").c_str() : text.c_str(), stdout);
  return exit_code;
}

}  // namespace

// Bad input, a snapshot that cannot be read, and recordings that cannot be aligned are all the
// input's problem: one line, exit 2.
int extrapolate_command(const ExtrapolateCliOptions& options) {
  try {
    return run(options);
  } catch (const replay::SnapshotError& e) {
    throw UsageError(e.what());
  } catch (const extrapolate::MisalignedRequest& e) {
    throw UsageError(e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  } catch (const std::range_error& e) {
    throw UsageError(e.what());
  } catch (const std::bad_alloc&) {
    throw UsageError("the snapshots need more memory than this machine has (std::bad_alloc); use a machine with more");
  }
}

Command add_extrapolate_command(CLI::App& app) {
  auto options = std::make_shared<ExtrapolateCliOptions>();
  CLI::App* extrapolate = app.add_subcommand(
      "extrapolate", "Predict a PyTorch program's allocator peak at a batch (or sequence length) it never ran, from "
                     "snapshots at two or three small ones: requests aligned by action and stack, each size fitted "
                     "exactly, the trace at --at replayed as `replay` does; --bisect the largest value that fits "
                     "--budget. Exit 0 with an answer, 1 when nothing fits, 2 on bad input or recordings that differ");
  extrapolate->add_option("SNAPSHOTS", options->snapshots, "Two or more snapshots, one per --knob value")->required();
  extrapolate->add_option("--knob", options->knob, "The knob and its value in each snapshot: batch=1,2,4")->required();
  extrapolate->add_option("--at", options->at, "The value to predict at (e.g. 32)");
  extrapolate->add_flag("--bisect", options->bisect, "The largest value whose replay fits --budget");
  extrapolate->add_option("--fit", options->fit,
                          "auto (affine; quadratic where a line fails and three snapshots allow), affine, quadratic");
  add_budget_option(*extrapolate, options->budget,
                    "A size with its unit or a GPU profile (rtx3060-12g); default unlimited");
  add_alloc_conf_option(*extrapolate, options->alloc_conf,
                        "Allocator settings over the snapshots' own (PYTORCH_CUDA_ALLOC_CONF syntax)");
  extrapolate->add_option("--device", options->device, "The traced device (default: the busiest)");
  extrapolate->add_option("--out", options->out_path, "Write the prediction's run record (JSON, for compare)");
  extrapolate->add_flag("--what-if", options->what_if, "Also replay the prediction under each remedy");
  add_json_flag(*extrapolate, options->json);
  return {extrapolate, [options] { return extrapolate_command(*options); }};
}

}  // namespace oomlab::cli
