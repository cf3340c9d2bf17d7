// oomlab suite: every scenario's every variant on the plan's devices, one JSON record per run
// plus suite.json in the output directory (suite_folder.hpp); exit 0 iff every outcome matches
// its expectation. Every setting is checked before anything runs.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/cli/commands.hpp"
#include "harness/cli/results_table.hpp"
#include "harness/cli/suite_folder.hpp"
#include "harness/memory/alloc_config.hpp"
#include "harness/process/lifetime.hpp"
#include "harness/report/baseline_file.hpp"
#include "harness/report/written_files.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/runner.hpp"
#include "harness/runner/json_text.hpp"

namespace oomlab::cli {

struct SuiteOptions {
  std::string device;  // empty: the default plan (make_plan)
  std::string scale;   // empty: the plan's scale per device
  std::string out_dir = "results/latest";
  double timeout_seconds = 1800;  // per variant: a hung variant must not hold up the suite
  bool update_baselines = false;  // rewrite $OOMLAB_BASELINES/<device>-<scale>
  bool no_oom_dump = false;       // no <record>.oom.json on an OOM
};

namespace {

using Plan = std::vector<std::pair<DeviceKind, Scale>>;

Scale default_scale(DeviceKind device) {
  switch (device) {
    case DeviceKind::cuda: return Scale::small;  // a quick GPU check
    case DeviceKind::host: return Scale::tiny;   // CPU kernels: seconds, not hours
    case DeviceKind::dry: return Scale::full;    // the real story's numbers, in milliseconds
  }
  return Scale::tiny;
}

// The default: the GPU at small scale when present, else host at tiny scale; and always dry
// at full scale, the prediction of the real-size story.
Plan make_plan(const SuiteOptions& options) {
  std::vector<DeviceKind> devices;
  if (!options.device.empty()) {
    devices = {device_option(options.device)};
  } else {
    devices = {require_code_for(cuda_available() ? DeviceKind::cuda : DeviceKind::host), DeviceKind::dry};
  }
  Plan plan;
  for (DeviceKind device : devices) {
    plan.emplace_back(device, options.scale.empty() ? default_scale(device)
                                                    : scale_option(options.scale));
  }
  return plan;
}

nlohmann::ordered_json summary_row(const RunRecord& record, const std::string& file_name) {
  return {{"scenario", record.scenario},
          {"variant", record.variant},
          {"device", record.device.kind},
          {"scale", record.scale},
          {"status", outcome_status_name(record.outcome.status)},
          {"diagnosis", record.outcome.diagnosis.empty() ? nlohmann::ordered_json(nullptr)
                                                         : nlohmann::ordered_json(record.outcome.diagnosis)},
          {"expected", record.expected},
          {"matches_expectation", record.matches_expectation},
          {"peak_allocated", record.memory.peak_allocated},
          {"peak_reserved", record.memory.peak_reserved},
          {"need", record.memory.need ? nlohmann::ordered_json(record.memory.need) : nullptr},
          // What is left of the budget at the run's need (negative: short by that much).
          {"headroom", record.memory.need && record.budget.bytes != memory::AllocatorConfig::kUnlimited
                           ? nlohmann::ordered_json(static_cast<std::int64_t>(record.budget.bytes) -
                                                    static_cast<std::int64_t>(record.memory.need))
                           : nullptr},
          {"record", file_name}};
}

std::string record_file_name(const RunRequest& request) {
  return request.scenario + "." + request.variant + "." + device_kind_name(request.device) + "-" +
         scale_name(request.scale) + ".json";
}

struct Skipped {
  std::string record, reason;
};

// The requests of the plan, each resolved now: a bad setting (OOMLAB_ALLOC_CONF, a budget)
// stops the suite before it runs anything or touches the output folder. A variant the device
// cannot run (Scenario::check_device) is skipped, with its reason, instead.
std::vector<RunRequest> plan_requests(const Plan& plan, double timeout_seconds, std::vector<Skipped>& skipped) {
  std::vector<RunRequest> requests;
  for (const auto& [device, scale] : plan) {
    for (const Scenario* scenario : ScenarioRegistry::instance().all()) {
      for (const VariantSpec& variant : scenario->variants()) {
        RunRequest request;
        request.scenario = scenario->name();
        request.variant = variant.name;
        request.device = device;
        request.scale = scale;
        request.timeout_seconds = timeout_seconds;
        try {
          resolve_run(request);
        } catch (const NotOnThisDevice& e) {
          skipped.push_back({record_file_name(request), e.what()});
          continue;
        } catch (const std::invalid_argument& e) {
          throw UsageError(e.what());
        }
        requests.push_back(request);
      }
    }
  }
  return requests;
}


nlohmann::ordered_json summary_header(const Plan& plan, const SuiteOptions& options) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const auto& [device, scale] : plan) {
    devices.push_back({{"device", device_kind_name(device)}, {"scale", scale_name(scale)}});
  }
  const char* env_conf = std::getenv("OOMLAB_ALLOC_CONF");
  return {{"schema_version", kRunRecordSchemaVersion},
          {"git_commit", git_commit()},
          {"timestamp", utc_timestamp()},
          {"oomlab_version", oomlab_version()},
          {"plan", devices},
          {"settings", {{"OOMLAB_ALLOC_CONF", env_conf ? nlohmann::ordered_json(env_conf) : nullptr},
                        {"timeout_seconds", options.timeout_seconds}}}};
}

}  // namespace

int suite_command(const SuiteOptions& options) {
  const Plan plan = make_plan(options);
  std::vector<Skipped> skipped;
  const std::vector<RunRequest> requests = plan_requests(plan, timeout_option(options.timeout_seconds), skipped);
  std::vector<std::string> planned;
  for (const RunRequest& request : requests) planned.push_back(record_file_name(request));
  const SuiteFolder folder(options.out_dir);

  nlohmann::ordered_json summary = summary_header(plan, options);
  summary["skipped"] = nlohmann::ordered_json::array();
  for (const Skipped& skip : skipped) {
    std::fprintf(stderr, "oomlab suite: skipped %s: %s\n", skip.record.c_str(), skip.reason.c_str());
    summary["skipped"].push_back({{"record", skip.record}, {"reason", skip.reason}});
  }
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  bool all_match = true;
  const auto write_summary = [&](bool complete) {
    summary["all_match"] = all_match;
    summary["runs"] = runs;
    folder.write_summary(summary, complete, planned);
  };
  write_summary(false);

  process::InterruptGuard interrupts;  // Ctrl-C: the running child first, then the suite
  std::size_t oom_dumps = 0;  // compare and report
  std::vector<RunRecord> records;
  try {
    for (std::size_t i = 0; i < requests.size(); ++i) {
      RunRequest request = requests[i];
      if (!options.no_oom_dump) request.oom_dump_path = report::oom_dump_path_beside(folder.file(planned[i]), "");
      RunRecord record = run_variant_in_child(request);
      oom_dumps += report::written_file_notes(request, record).size();  // compare and report
      try {
        write_file_atomically(folder.file(planned[i]), json_text(to_json(record), 2) + "\n");
      } catch (const std::runtime_error& e) {
        throw UsageError(e.what());
      }
      all_match = all_match && record.matches_expectation;
      runs.push_back(summary_row(record, planned[i]));
      write_summary(false);
      // One line per finished run, so a long suite shows where it is in any log.
      std::fprintf(stderr, "[%zu/%zu] %s/%s on %s/%s: %s%s\n", i + 1, requests.size(),
                   record.scenario.c_str(), record.variant.c_str(), record.device.kind.c_str(),
                   record.scale.c_str(), outcome_status_name(record.outcome.status),
                   record.matches_expectation ? "" : " (NOT as expected)");
      records.push_back(std::move(record));
      process::throw_if_interrupted();
    }
  } catch (const process::Interrupted& interrupted) {
    std::fprintf(stderr, "oomlab: suite %s after %zu of %zu runs; %s/%s says \"complete\": false\n",
                 interrupted.describe().c_str(), records.size(), requests.size(),
                 folder.path().c_str(), SuiteFolder::kSummaryName);
    throw;
  }
  summary["finished"] = utc_timestamp();
  write_summary(true);

  if (records.empty()) std::printf("no scenarios registered\n");
  if (oom_dumps > 0) {  // compare and report
    std::fprintf(stderr,
                 "oomlab: %zu OOM dump(s) written beside their records in %s (<record>.oom.json: the last "
                 "allocator events and every segment at the OOM; --no-oom-dump turns them off)\n",
                 oom_dumps, folder.path().c_str());
  }
  if (options.update_baselines) {  // compare and report: harness/report/baseline_file.hpp
    for (const std::string& baselines : report::update_baselines(records)) {
      std::fprintf(stderr, "oomlab: baselines written to %s\n", baselines.c_str());
    }
  }
  print_results_table(records, stdout);
  print_warnings(records, stderr);
  return all_match ? 0 : 1;
}

Command add_suite_command(CLI::App& app) {
  auto options = std::make_shared<SuiteOptions>();
  CLI::App* suite = app.add_subcommand(
      "suite", "Run every scenario's variants: on a GPU cuda/small + dry/full, else host/tiny + "
               "dry/full; exit 0 iff every outcome matches its expectation");
  suite->add_option("--device", options->device, "Only this device: cuda | host | dry");
  suite->add_option("--scale", options->scale, "Only this scale: tiny | small | full");
  suite->add_option("--timeout", options->timeout_seconds,
                    "Kill a variant still running after this many seconds (default 1800; 0: none)");
  suite->add_option("--out-dir", options->out_dir,
                    "Directory for one JSON per run plus suite.json (default: results/latest)");
  suite->add_flag("--no-oom-dump", options->no_oom_dump,
                  "A variant that runs out of memory writes no <record>.oom.json beside its record");
  suite->add_flag("--update-baselines", options->update_baselines,
                  "Also rewrite the regression baselines of the devices and scales run, in "
                  "$OOMLAB_BASELINES (default results/baselines)/<device>-<scale>/");
  return {suite, [options] { return suite_command(*options); }, [] { return true; }};
}

}  // namespace oomlab::cli
