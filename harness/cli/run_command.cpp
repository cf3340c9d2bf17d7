// oomlab run SCENARIO: validates everything first (so bad input never half-runs), then runs
// each selected variant in a child process, prints the table and writes --out.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/cli/commands.hpp"
#include "harness/cli/profile_table.hpp"
#include "harness/cli/results_table.hpp"
#include "harness/process/lifetime.hpp"
#include "harness/report/written_files.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/runner.hpp"
#include "harness/runner/json_text.hpp"

namespace oomlab::cli {

struct RunOptions {
  std::string scenario;
  std::string variant = "all";
  std::string device;  // empty: cuda when a GPU exists, else host
  std::string scale = "tiny";
  std::string budget;  // empty: the scenario's budget at the scale
  int steps = 0;
  bool steps_given = false;
  std::string out_path;
  std::string trace_path;
  std::string alloc_conf;
  std::vector<std::string> set;  // --set name=value[,name=value] (repeatable)
  bool in_process = false;  // debugging: no child process (a crash then ends oomlab)
  double timeout_seconds = 0;  // per variant; 0: no limit
  bool profile = false;        // time the profiled ranges and print them per variant
  bool no_oom_dump = false;    // no OOM dump beside --out
};

namespace {

// "trace.json" -> "trace.broken.json", so several variants do not overwrite one trace.
std::string trace_path_for(const std::string& path, const std::string& variant) {
  auto slash = path.find_last_of('/');
  auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    return path + "." + variant;
  }
  return path.substr(0, dot) + "." + variant + path.substr(dot);
}

// A run that changes what the story fixes (knobs, allocator settings, the budget) asks the
// user's own question; only the plain run tests the story's expected outcome.
bool is_question(const RunOptions& options) {
  const char* env_conf = std::getenv("OOMLAB_ALLOC_CONF");
  return !options.set.empty() || !options.alloc_conf.empty() || !options.budget.empty() ||
         (env_conf != nullptr && *env_conf != '\0');
}

std::vector<RunRequest> build_requests(const RunOptions& options) {
  const Scenario* scenario = ScenarioRegistry::instance().find(options.scenario);
  RunRequest base;
  base.scenario = options.scenario;
  base.device = options.device.empty() ? require_code_for(default_device_kind()) : device_option(options.device);
  base.scale = scale_option(options.scale);
  base.budget = options.budget;
  if (options.steps_given && options.steps <= 0) {
    throw UsageError("--steps must be a positive number, got " + std::to_string(options.steps));
  }
  base.steps = options.steps;
  base.alloc_conf = options.alloc_conf;
  base.set = knob_settings_option(options.set);
  base.timeout_seconds = timeout_option(options.timeout_seconds);
  base.profile = options.profile;
  if (!options.out_path.empty()) require_writable("--out", options.out_path);
  if (!options.trace_path.empty()) require_writable("--trace", options.trace_path);

  std::vector<RunRequest> requests;
  try {
    if (!scenario) {
      base.variant = options.variant;
      resolve_run(base);  // throws naming the scenario and listing the valid ones
      throw UsageError("unknown scenario '" + options.scenario + "'");
    }
    auto variants = select_variants(*scenario, options.variant);
    for (const auto& variant : variants) {
      RunRequest request = base;
      request.variant = variant;
      if (!options.trace_path.empty()) {
        request.trace_path = variants.size() == 1 ? options.trace_path
                                                  : trace_path_for(options.trace_path, variant);
      }
      if (!options.out_path.empty() && !options.no_oom_dump) {  // compare and report
        request.oom_dump_path = report::oom_dump_path_beside(options.out_path, variant);
      }
      resolve_run(request);  // budget, alloc conf, device: every error before any run
      requests.push_back(request);
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return requests;
}

}  // namespace

int run_command(const RunOptions& options) {
  std::vector<RunRequest> requests = build_requests(options);
  process::InterruptGuard interrupts;  // Ctrl-C stops the child first, then oomlab (exit 130)
  std::vector<RunRecord> records;
  for (const RunRequest& request : requests) {
    records.push_back(options.in_process ? run_variant_in_process(request)
                                         : run_variant_in_child(request));
    process::throw_if_interrupted();
  }
  print_results_table(records, stdout, is_question(options) ? TableKind::question : TableKind::story);
  if (options.profile) print_profiles(records, stdout);
  const bool all_written = print_warnings(records, stderr);
  for (std::size_t i = 0; i < records.size(); ++i) {  // compare and report: the files written
    for (const std::string& note : report::written_file_notes(requests[i], records[i]))
      std::fprintf(stderr, "%s\n", note.c_str());
  }

  if (!options.out_path.empty()) {
    nlohmann::ordered_json json;
    if (records.size() == 1) {
      json = to_json(records.front());
    } else {
      json = nlohmann::ordered_json::array();
      for (const RunRecord& record : records) json.push_back(to_json(record));
    }
    try {
      write_file_atomically(options.out_path, json_text(json, 2) + "\n");
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
  }
  // A file the user asked for that could not be written is the user's path's fault: exit 2.
  if (!all_written) return 2;
  if (is_question(options)) return 0;  // the user's own what-if: its outcome is the answer
  bool all_match = true;
  for (const RunRecord& record : records) all_match = all_match && record.matches_expectation;
  return all_match ? 0 : 1;
}

Command add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand(
      "run", "Run a scenario's variants, each in a child process. A plain run tests the story: exit "
             "0 iff every outcome matches its expectation, 1 otherwise. With --set, --alloc-conf, "
             "OOMLAB_ALLOC_CONF or --budget it is a question: exit 0 whatever the outcome. 2 on bad "
             "input");
  run->add_option("scenario", options->scenario, "Scenario name (see `oomlab list`)")->required();
  run->add_option("--variant", options->variant, "Variant name or `all` (default: all)");
  run->add_option("--device", options->device, "cuda | host | dry (default: cuda when a GPU exists, else host)");
  run->add_option("--scale", options->scale, "tiny | small | full (default: tiny)");
  CLI::Option* budget = add_budget_option(
      *run, options->budget,
      "Size with its unit (12GiB, 512MiB, 1.5GB), a GPU profile (rtx4090; see `oomlab list`) or "
      "unlimited (default: the scenario's)");
  CLI::Option* steps =
      run->add_option("--steps", options->steps, "Steps to run (default: the scenario's at this scale)");
  run->add_option("--out", options->out_path, "Write the record (an array for several variants) to this JSON file");
  run->add_option("--trace", options->trace_path,
                  "Write the allocator trace (Chrome/Perfetto JSON); with several variants "
                  "the variant name goes before the extension");
  add_set_option(*run, options->set,
                 "Knob values over the variant's, e.g. batch=24,dtype=bf16 (see `oomlab list "
                 "SCENARIO`); repeatable. The run is then a question: exit 0 whatever the outcome");
  add_alloc_conf_option(*run, options->alloc_conf,
                        "Allocator settings over OOMLAB_ALLOC_CONF, e.g. max_split_size_mb:128");
  run->add_option("--timeout", options->timeout_seconds,
                  "Kill a variant still running after this many seconds (0: no limit)");
  run->add_flag("--profile", options->profile,
                "Time the scenario's ranges (attention, MLP, optimizer...) on the device; print "
                "them and keep them in the record as profile_ms.<range>");
  run->add_flag("--no-oom-dump", options->no_oom_dump,
                "With --out, a variant that runs out of memory writes no OUT.<variant>.oom.json "
                "(its last allocator events and every segment at the OOM)");
  run->add_flag("--in-process", options->in_process, "Run variants in this process (debugging; a crash ends oomlab)")
      ->group("");
  const auto run_variants = [options, budget, steps] {
    options->steps_given = steps->count() > 0;
    if (budget->count() > 0 && options->budget.empty()) {
      throw UsageError(
          "--budget needs a value: a size with its unit (12GiB, 512MiB), a GPU profile "
          "(rtx4090, a100-40g; see `oomlab list`) or unlimited");
    }
    return run_command(*options);
  };
  return {run, run_variants, [options] { return !options->in_process; }};
}

}  // namespace oomlab::cli
