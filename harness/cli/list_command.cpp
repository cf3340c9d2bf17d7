// oomlab list [SCENARIO]: every scenario with its budgets and steps per scale and each variant's
// story; with a scenario, also its knobs (what --set takes) and each variant's values.
// oomlab list --models: the model presets (--set model=NAME) with parameters and weight bytes.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/cli/commands.hpp"
#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/runner/model_catalog.hpp"
#include "harness/runner/runner.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab::cli {

struct ListOptions {
  std::string scenario;  // empty: every scenario
  std::string scale = "full";
  bool models = false;   // the model presets instead (--models)
};

namespace {

std::string describe_budget(const std::string& text) {
  try {
    return memory::parse_budget(text).describe();
  } catch (const std::exception&) {
    return text + " (invalid)";  // a scenario bug; `run` reports it in full
  }
}

// Rows of cells, columns padded to their widest cell (the last one is not padded).
void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line = " ";
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += " " + row[c] + (c + 1 < row.size() ? std::string(width[c] - row[c].size(), ' ') : "");
    }
    std::printf("%s\n", line.c_str());
  }
}

// 8030261248 -> "8.03B", 124439808 -> "124.4M".
std::string parameter_count(std::uint64_t n) {
  char text[32];
  if (n >= 1000000000) std::snprintf(text, sizeof text, "%.2fB", static_cast<double>(n) / 1e9);
  else std::snprintf(text, sizeof text, "%.1fM", static_cast<double>(n) / 1e6);
  return text;
}

void print_models() {
  const std::vector<ModelListing> models = model_catalog();
  if (models.empty()) {
    std::printf("no model presets registered\n");
    return;
  }
  std::printf("model presets (oomlab run SCENARIO --set model=NAME; or model=PATH to a Hugging Face config.json "
              "or its folder)\nweights as a run allocates them: int8 and nf4 quantise the block projections "
              "(quantize_base=true|nf4), the embeddings and head stay bf16\n\n");
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"model", "parameters"};
  for (const auto& [storage, bytes] : models.front().bytes) header.push_back(storage);
  header.push_back("shape");
  rows.push_back(header);
  for (const ModelListing& model : models) {
    std::vector<std::string> row = {model.name, parameter_count(model.parameters)};
    for (const auto& [storage, bytes] : model.bytes) row.push_back(format_size(bytes));
    row.push_back(model.same_as.empty() ? model.shape : "= " + model.same_as);
    rows.push_back(row);
  }
  print_table(rows);
}

void print_scenario(const Scenario& scenario) {
  std::printf("%s  %s\n", scenario.name().c_str(), scenario.summary().c_str());
  for (Scale scale : {Scale::tiny, Scale::small, Scale::full}) {
    std::printf("  %-5s  budget %-28s  %d steps\n", scale_name(scale),
                describe_budget(scenario.budget(scale)).c_str(), scenario.default_steps(scale));
  }
  for (const VariantSpec& variant : scenario.variants()) {
    std::printf("    %-22s expect %-5s  %s\n", variant.name.c_str(), expect_name(variant.expected),
                variant.description.c_str());
  }
  std::string knobs;
  for (const KnobSpec& knob : scenario.knobs()) knobs += (knobs.empty() ? "" : ", ") + knob.name;
  if (!knobs.empty()) std::printf("  knobs: %s (oomlab list %s)\n", knobs.c_str(), scenario.name().c_str());
}

// The knobs, then one row per variant with its values at `scale`.
void print_knobs(const Scenario& scenario, Scale scale) {
  const std::vector<KnobSpec> knobs = scenario.knobs();
  if (knobs.empty()) {
    std::printf("\n%s has no knobs.\n", scenario.name().c_str());
    return;
  }
  std::printf("\nknobs (oomlab run %s --set name=value,...):\n", scenario.name().c_str());
  for (const KnobSpec& knob : knobs) {
    std::printf("  %-14s %s\n  %-14s %s\n", knob.name.c_str(), knob.description.c_str(), "",
                knob.accepted().c_str());
  }
  std::printf("\nvalues at scale %s:\n", scale_name(scale));
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"variant"};
  for (const KnobSpec& knob : knobs) header.push_back(knob.name);
  rows.push_back(header);
  for (const VariantSpec& variant : scenario.variants()) {
    const auto values = scenario.variant_knobs(variant.name, scale);
    std::vector<std::string> row = {variant.name};
    for (const KnobSpec& knob : knobs) {
      auto it = values.find(knob.name);
      row.push_back(it == values.end() ? "-" : it->second);
    }
    rows.push_back(row);
  }
  print_table(rows);
}

}  // namespace

int list_command(const ListOptions& options) {
  if (options.models) {
    if (!options.scenario.empty()) throw UsageError("list --models lists every model: give no scenario with it");
    print_models();
    return 0;
  }
  if (!options.scenario.empty()) {
    const Scenario* scenario = ScenarioRegistry::instance().find(options.scenario);
    if (!scenario) {
      try {
        RunRequest request;
        request.scenario = options.scenario;
        resolve_run(request);  // throws naming the scenario and listing the valid ones
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
    }
    print_scenario(*scenario);
    print_knobs(*scenario, scale_option(options.scale));
    return 0;
  }
  auto scenarios = ScenarioRegistry::instance().all();
  if (scenarios.empty()) {
    std::printf("no scenarios registered\n");
    return 0;
  }
  for (const Scenario* scenario : scenarios) {
    print_scenario(*scenario);
    std::printf("\n");
  }
  return 0;
}

Command add_list_command(CLI::App& app) {
  auto options = std::make_shared<ListOptions>();
  CLI::App* list = app.add_subcommand(
      "list", "List scenarios, variants, budgets and expected outcomes; with a scenario, its knobs "
              "and each variant's values");
  list->add_option("scenario", options->scenario, "Show this scenario's knobs");
  list->add_option("--scale", options->scale, "The scale whose knob values to show (default: full)");
  list->add_flag("--models", options->models,
                 "The model presets --set model= takes, with parameters and weight bytes per dtype");
  return {list, [options] { return list_command(*options); }};
}

}  // namespace oomlab::cli
