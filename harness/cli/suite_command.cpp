// oomlab suite: every scenario's every variant on the plan's devices, one JSON record per run
// plus suite.json in the output directory; exit 0 iff every outcome matches its expectation.
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/cli/results_table.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/runner.hpp"

namespace oomlab::cli {

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
    devices = {cuda_available() ? DeviceKind::cuda : DeviceKind::host, DeviceKind::dry};
  }
  Plan plan;
  for (DeviceKind device : devices) {
    plan.emplace_back(device, options.scale.empty() ? default_scale(device)
                                                    : scale_option(options.scale));
  }
  return plan;
}

std::string record_file_name(const RunRecord& record) {
  return record.scenario + "." + record.variant + "." + record.device.kind + "-" + record.scale +
         ".json";
}

nlohmann::ordered_json summary_row(const RunRecord& record) {
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
          {"record", record_file_name(record)}};
}

void write_or_usage_error(const std::string& path, const std::string& contents) {
  try {
    write_file_atomically(path, contents);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

int suite_command(const SuiteOptions& options) {
  Plan plan = make_plan(options);
  std::error_code error;
  std::filesystem::create_directories(options.out_dir, error);
  if (error) throw UsageError("--out-dir " + options.out_dir + ": " + error.message());
  require_writable("--out-dir", options.out_dir + "/suite.json");

  if (options.timeout_seconds < 0) {
    throw UsageError("--timeout must be 0 (no limit) or a positive number of seconds");
  }
  std::vector<RunRequest> requests;
  for (const auto& [device, scale] : plan) {
    for (const Scenario* scenario : ScenarioRegistry::instance().all()) {
      for (const VariantSpec& variant : scenario->variants()) {
        RunRequest request;
        request.scenario = scenario->name();
        request.variant = variant.name;
        request.device = device;
        request.scale = scale;
        request.timeout_seconds = options.timeout_seconds;
        requests.push_back(request);
      }
    }
  }

  std::vector<RunRecord> records;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    RunRecord record = run_variant_in_child(requests[i]);
    write_or_usage_error(options.out_dir + "/" + record_file_name(record),
                         to_json(record).dump(2) + "\n");
    // One line per finished run, so a long suite shows where it is in any log.
    std::fprintf(stderr, "[%zu/%zu] %s/%s on %s/%s: %s%s\n", i + 1, requests.size(),
                 record.scenario.c_str(), record.variant.c_str(), record.device.kind.c_str(),
                 record.scale.c_str(), outcome_status_name(record.outcome.status),
                 record.matches_expectation ? "" : " (NOT as expected)");
    records.push_back(std::move(record));
  }

  bool all_match = true;
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const RunRecord& record : records) {
    all_match = all_match && record.matches_expectation;
    runs.push_back(summary_row(record));
  }
  nlohmann::ordered_json summary = {{"schema_version", kRunRecordSchemaVersion},
                                    {"git_commit", git_commit()},
                                    {"timestamp", utc_timestamp()},
                                    {"oomlab_version", oomlab_version()},
                                    {"all_match", all_match},
                                    {"runs", runs}};
  write_or_usage_error(options.out_dir + "/suite.json", summary.dump(2) + "\n");

  if (records.empty()) std::printf("no scenarios registered\n");
  print_results_table(records, stdout);
  return all_match ? 0 : 1;
}

}  // namespace oomlab::cli
