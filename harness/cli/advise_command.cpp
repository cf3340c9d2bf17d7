// oomlab advise SCENARIO: the decision tree walked on the user's failing run, each candidate run
// on dry; prints the path, every candidate's need and fit and cost, and the cheapest fix.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "harness/advise/advise.hpp"
#include "harness/cli/commands.hpp"
#include "harness/memory/size.hpp"
#include "harness/report/number_format.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/json_text.hpp"

namespace oomlab::cli {

struct AdviseCliOptions : QuestionOptions {
  bool confirm = false;     // run each fitting candidate on the GPU for its throughput
  std::string results_dir;  // committed records for costs (default: results/<this GPU>)
};

namespace {

using Json = nlohmann::ordered_json;

// The project's measured GPU: its committed records price the fixes where this machine has none.
constexpr const char* kMeasuredGpuResults = "results/h200";

// results/<gpu> for the GPU in this machine ("NVIDIA H200" -> results/h200), when it exists; else
// the project's measured GPU's, with `borrowed` set: costs then come from another card.
std::string committed_results(bool& borrowed) {
  std::error_code error;
  borrowed = false;
  if (cuda_available()) {
    std::string name = query_device_info(DeviceKind::cuda).name;
    const auto space = name.find_last_of(' ');
    if (space != std::string::npos) name = name.substr(space + 1);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    const std::string dir = "results/" + name;
    if (std::filesystem::is_directory(dir, error)) return dir;
  }
  if (!std::filesystem::is_directory(kMeasuredGpuResults, error)) return {};
  borrowed = true;
  return kMeasuredGpuResults;
}

std::string cost_text(const advise::Candidate& c) {
  if (!c.fits) return "-";
  if (c.throughput <= 0) return "unmeasured";
  return report::format_number(c.throughput) + " " + c.throughput_unit;  // "442900 tokens/s", not 4.43e+05
}

Json to_json(const advise::Advice& advice) {
  Json candidates = Json::array();
  for (const advise::Candidate& c : advice.candidates) {
    candidates.push_back(
        {{"step", c.step},
         {"change", c.change},
         {"trade", c.trade},
         {"rank", c.rank},
         {"changes_answers", c.changes_answers},
         {"outcome", c.outcome},
         {"fits", c.fits},
         {"need", c.need ? Json(c.need) : Json(nullptr)},
         {"throughput", c.throughput > 0 ? Json(c.throughput) : Json(nullptr)},
         {"throughput_unit", c.throughput_unit.empty() ? Json(nullptr) : Json(c.throughput_unit)},
         {"throughput_source", c.throughput_source.empty() ? Json(nullptr) : Json(c.throughput_source)}});
  }
  return {{"scenario", advice.as_given.scenario},
          {"variant", advice.as_given.variant},
          {"knobs", advice.as_given.knobs},
          {"budget", advice.as_given.budget.text},
          {"as_given", {{"outcome", outcome_status_name(advice.as_given.outcome.status)},
                        {"diagnosis", advice.as_given.outcome.diagnosis},
                        {"need", advice.as_given.memory.need},
                        {"message", advice.as_given.outcome.message}}},
          {"path", advice.path},
          {"candidates", candidates},
          {"best", advice.best ? Json(*advice.best) : Json(nullptr)},
          {"best_by", !advice.best ? Json(nullptr)
                      : advice.best_is_measured ? Json("measured throughput") : Json("the tree's order of cost")}};
}

void print_table(const advise::Advice& advice) {
  std::vector<std::vector<std::string>> rows = {{"candidate", "change", "outcome", "need", "cost"}};
  for (const advise::Candidate& c : advice.candidates) {
    rows.push_back({c.step, c.change, c.outcome, c.need ? format_size(c.need) : "-", cost_text(c)});
  }
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line = " ";
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += " " + row[i] + (i + 1 < row.size() ? std::string(width[i] - row[i].size(), ' ') : "");
    }
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace

int advise_command(const AdviseCliOptions& options) {
  const RunRequest base = question_request(options);
  advise::AdviseOptions settings;
  settings.confirm = options.confirm;
  bool borrowed = false;
  settings.results_dir = options.results_dir.empty() ? committed_results(borrowed) : options.results_dir;
  if (options.confirm && !cuda_available()) {
    throw UsageError("--confirm runs the candidates on the GPU: no usable CUDA device (" + cuda_unavailable_reason() +
                     ")");
  }
  if (options.confirm) require_code_for(DeviceKind::cuda);
  advise::Advice advice;
  try {
    advice = advise::advise(base, settings);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const Json json = to_json(advice);
  if (!options.out_path.empty()) {
    RunRecord record = advice.best ? run_variant_in_process([&] {
      RunRequest best = advice.candidates[*advice.best].request;
      best.quiet = true;
      return best;
    }()) : advice.as_given;
    Json out = oomlab::to_json(record);
    out["advise"] = json;
    try {
      write_file_atomically(options.out_path, json_text(out, 2) + "\n");
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
  }
  if (options.json) {
    std::printf("%s\n", json_text(json, 2).c_str());
  } else {
    std::printf("advise: %s/%s on %s scale (%s), budget %s\n", base.scenario.c_str(), base.variant.c_str(),
                scale_name(base.scale), describe_knobs(advice.as_given.knobs).c_str(),
                advice.as_given.budget.text.c_str());
    for (const std::string& step : advice.path) std::printf("  %s\n", step.c_str());
    if (!advice.candidates.empty()) {
      std::printf("\n");
      print_table(advice);
    }
    std::printf("\n");
    if (advice.best && advice.best_is_measured) {
      const advise::Candidate& best = advice.candidates[*advice.best];
      std::printf("cheapest fix that fits (the fastest of those whose cost was measured): %s (%s): needs %s; %s; "
                  "%s (%s)\n", best.step.c_str(), best.change.c_str(), format_size(best.need).c_str(),
                  best.trade.c_str(), cost_text(best).c_str(), best.throughput_source.c_str());
      for (const advise::Candidate& c : advice.candidates) {
        if (c.fits && c.changes_answers && c.throughput > best.throughput) {
          std::printf("not taken, though faster (%s), as it changes the answers: %s\n", cost_text(c).c_str(),
                      c.step.c_str());
        }
      }
      if (borrowed) {
        std::printf(
            "costs are %s's measurements, not this machine's: which fix is faster carries over to other "
            "GPUs roughly, the numbers do not (--confirm on your GPU measures them)\n",
            settings.results_dir.c_str());
      }
    } else if (advice.best) {
      const advise::Candidate& best = advice.candidates[*advice.best];
      std::printf("no cost of a fitting fix is measured here, so none is called cheapest; first in the tree's order "
                  "of cost: %s (%s): needs %s; %s (--confirm on a GPU measures the costs)\n", best.step.c_str(),
                  best.change.c_str(), format_size(best.need).c_str(), best.trade.c_str());
    } else if (!advice.stop_at_diagnosis && advice.as_given.outcome.status != OutcomeStatus::ok) {
      std::printf("no single remedy or stack of them fits this budget: a larger card, or sharding the model "
                  "over several GPUs\n");
    }
  }
  if (advice.stop_at_diagnosis) return 1;  // a leak or memory outside the allocator: no fix here
  return advice.best || advice.as_given.outcome.status == OutcomeStatus::ok ? 0 : 1;
}

Command add_advise_command(CLI::App& app) {
  auto options = std::make_shared<AdviseCliOptions>();
  CLI::App* advise = app.add_subcommand(
      "advise", "Walk the decision tree on a failing run: each remedy (allocator settings, the "
                "scenario's fixes, bf16, fused attention, checkpointing, accumulation, offload, a "
                "smaller batch) run on dry; prints each one's need, fit and cost and the cheapest "
                "fix that fits. Exit 0 with a fix, 1 when none fits, 2 on bad input");
  add_question_options(*advise, *options);
  advise->add_flag("--confirm", options->confirm,
                   "Run each fitting candidate on the GPU and rank them by measured throughput");
  advise->add_option("--results", options->results_dir,
                     "Committed run records to take costs from (default: results/<this GPU> if present)");
  return {advise, [options] { return advise_command(*options); }, [] { return true; }};
}

}  // namespace oomlab::cli
