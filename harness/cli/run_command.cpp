// oomlab run SCENARIO: validates everything first (so bad input never half-runs), then runs
// each selected variant in a child process, prints the table and writes --out.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/cli/profile_table.hpp"
#include "harness/cli/results_table.hpp"
#include "harness/process/lifetime.hpp"
#include "harness/report/written_files.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/runner.hpp"
#include "harness/runner/json_text.hpp"

namespace oomlab::cli {

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
    for (const std::string& note : report::written_file_notes(requests[i], records[i])) std::fprintf(stderr, "%s\n", note.c_str());
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

}  // namespace oomlab::cli
