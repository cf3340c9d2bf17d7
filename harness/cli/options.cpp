// Options shared by several commands: their declarations and their values.
#include "harness/cli/commands.hpp"

#include <cmath>

#include <CLI/CLI.hpp>

#include "harness/device/cuda_archs.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/temp_directory.hpp"

namespace oomlab::cli {

void add_set_option(CLI::App& command, std::vector<std::string>& set, const std::string& description) {
  command.add_option("--set", set, description)->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

CLI::Option* add_budget_option(CLI::App& command, std::string& budget, const std::string& description) {
  return command.add_option("--budget", budget, description);
}

void add_alloc_conf_option(CLI::App& command, std::string& alloc_conf, const std::string& description) {
  command.add_option("--alloc-conf", alloc_conf, description);
}

void add_json_flag(CLI::App& command, bool& json, const std::string& description) {
  command.add_flag("--json", json, description);
}

void add_question_options(CLI::App& command, QuestionOptions& options) {
  command.add_option("scenario", options.scenario, "Scenario name (see `oomlab list`)")->required();
  command.add_option("--variant", options.variant, "Variant (default: the scenario's first that runs out of memory)");
  command.add_option("--device", options.device,
                     "dry (default) searches on dry only; cuda or host also confirm the answer there");
  command.add_option("--scale", options.scale, "tiny | small | full (default: full)");
  add_budget_option(command, options.budget,
                    "Size with its unit, a GPU profile or unlimited (default: the scenario's)");
  add_set_option(command, options.set, "Knob values, e.g. batch=24,dtype=bf16; repeatable");
  add_alloc_conf_option(command, options.alloc_conf, "Allocator settings over OOMLAB_ALLOC_CONF");
  command.add_option("--steps", options.steps,
                     "Steps per run (default: the scenario's at the scale); more steps see slower growth");
  command.add_option("--out", options.out_path, "Write the answer's run record (JSON)");
  add_json_flag(command, options.json, "The answer as JSON, for tools");
}

DeviceKind device_option(const std::string& text) {
  auto kind = parse_device_kind(text);
  if (!kind) throw UsageError("--device '" + text + "' is not one of: cuda, host, dry");
  if (*kind == DeviceKind::cuda && !cuda_available()) {
    throw UsageError("--device cuda: no usable CUDA device (" + cuda_unavailable_reason() + ")");
  }
  return require_code_for(*kind);
}

DeviceKind require_code_for(DeviceKind kind) {
  if (kind == DeviceKind::cuda) {
    const std::string problem = startup_cuda_code_problem();
    if (!problem.empty()) throw UsageError(problem);
  }
  return kind;
}

Scale scale_option(const std::string& text) {
  auto scale = parse_scale(text);
  if (!scale) throw UsageError("--scale '" + text + "' is not one of: tiny, small, full");
  return *scale;
}

double timeout_option(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) {
    throw UsageError("--timeout must be 0 (no limit) or a positive number of seconds, got " +
                     std::to_string(seconds));
  }
  return seconds;
}

KnobSettings knob_settings_option(const std::vector<std::string>& sets) {
  try {
    std::string joined;
    for (const std::string& set : sets) {
      if (set.empty()) throw std::invalid_argument("--set needs knob=value pairs, e.g. batch=24");
      joined += (joined.empty() ? "" : ",") + set;
    }
    return parse_knob_settings(joined);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

RunRequest question_request(const QuestionOptions& options) {
  RunRequest request;
  request.scenario = options.scenario;
  request.device = DeviceKind::dry;
  device_option(options.device);  // validated: cuda/host confirm the answer afterwards
  request.scale = scale_option(options.scale);
  request.budget = options.budget;
  request.alloc_conf = options.alloc_conf;
  if (options.steps < 0) throw UsageError("--steps must be a positive number, got " + std::to_string(options.steps));
  request.steps = options.steps;
  request.set = knob_settings_option(options.set);
  request.progress = false;
  if (!options.out_path.empty()) require_writable("--out", options.out_path);
  try {
    const Scenario* scenario = ScenarioRegistry::instance().find(options.scenario);
    if (scenario && options.variant.empty()) {
      // The question is usually about the story's failing run.
      for (const VariantSpec& variant : scenario->variants()) {
        if (variant.expected == Expect::oom) {
          request.variant = variant.name;
          break;
        }
      }
      if (request.variant.empty()) request.variant = scenario->variants().front().name;
    } else {
      request.variant = options.variant;
    }
    resolve_run(request);  // every setting, before any probe
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return request;
}

void require_writable(const char* option, const std::string& path) {
  std::string why = why_not_writable(path);
  if (!why.empty()) throw UsageError(std::string(option) + " " + path + ": cannot write (" + why + ")");
}

void require_temp_directory() {
  const std::string why = why_no_temp_directory();
  if (!why.empty()) throw UsageError(why);
}

}  // namespace oomlab::cli
