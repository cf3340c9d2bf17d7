#include "harness/report/baseline_file.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "harness/report/record_fields.hpp"
#include "harness/runner/atomic_file.hpp"

namespace oomlab::report {

namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// What oomlab wrote into a baseline folder before (records, suite.json) or now (baselines):
// the only files write_baselines removes.
bool written_by_oomlab(const fs::path& path) {
  try {
    const Json json = Json::parse(read_text_file(path.string()));
    return json.is_object() && (json.contains(kBaselineKey) || json.contains("schema_version"));
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::string baselines_root() {
  const char* dir = std::getenv("OOMLAB_BASELINES");
  return dir && *dir ? dir : "results/baselines";
}

std::string baseline_folder(const std::string& root, const std::string& device, const std::string& scale) {
  return root + "/" + device + "-" + scale;
}

std::string regenerate_command(const std::string& device, const std::string& scale) {
  return "oomlab suite --device " + device + " --scale " + scale + " --update-baselines";
}

Json baseline_json(const RunRecord& record) {
  const Json full = to_json(record);
  Json json;
  json[kBaselineKey] = regenerate_command(record.device.kind, record.scale);
  // The record's own layout, less what is measured or names the machine and the build.
  for (const auto& [key, value] : full.items()) {
    if (key == "device") {
      json["device"] = {{"kind", record.device.kind}};
    } else if (key == "memory" && record.device.kind == "cuda") {
      Json memory = value;
      memory.erase("peak_device_used");  // measured on a GPU: context and other processes
      json["memory"] = memory;
    } else if (key == "outcome" && value["message"].is_string()) {
      Json outcome = value;
      outcome["message"] = without_process_ids(value["message"].get<std::string>());
      json["outcome"] = outcome;
    } else if (key == "warnings") {
      Json warnings = Json::array();
      for (const Json& warning : value) warnings.push_back(without_process_ids(warning.get<std::string>()));
      json["warnings"] = warnings;
    } else if (key == "metrics") {
      Json metrics = Json::object();
      for (const auto& [name, number] : value.items()) {
        if (!is_timing_metric(name)) metrics[name] = number;
      }
      json["metrics"] = metrics;
    } else if (key != "throughput" && key != "step_seconds" && key != "git_commit" &&
               key != "timestamp" && key != "oomlab_version") {
      json[key] = value;
    }
  }
  return json;
}

bool is_baseline_json(const Json& json) { return json.is_object() && json.contains(kBaselineKey); }

RunRecord record_from_baseline(const Json& baseline) {
  // Put back what a baseline leaves out, as "unknown", and read it as the record it was.
  Json json = baseline;
  json.erase(kBaselineKey);
  if (!json.contains("device") || !json["device"].is_object()) {
    throw std::runtime_error("baseline: field device must be an object");
  }
  Json& device = json["device"];
  device["name"] = "";
  device["compute_capability"] = nullptr;
  device["total_memory"] = 0;
  device["driver_version"] = 0;
  device["runtime_version"] = 0;
  if (json.contains("memory") && json["memory"].is_object() && !json["memory"].contains("peak_device_used")) {
    json["memory"]["peak_device_used"] = 0;
  }
  json["throughput"] = {{"value", nullptr}, {"unit", nullptr}};
  json["step_seconds"] = Json::array();
  json["git_commit"] = "";
  json["timestamp"] = "";
  json["oomlab_version"] = "";
  try {
    return run_record_from_json(json);
  } catch (const std::runtime_error& e) {
    // "run record: missing field x" reads wrong for a baseline file.
    std::string what = e.what();
    if (what.rfind("run record", 0) == 0) what = "baseline" + what.substr(10);
    throw std::runtime_error(what);
  }
}

std::string write_baselines(const std::string& root, const std::vector<RunRecord>& records) {
  if (records.empty()) throw std::runtime_error("no records to write as baselines");
  const std::string& device = records.front().device.kind;
  const std::string& scale = records.front().scale;
  const std::string folder = baseline_folder(root, device, scale);
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) throw std::runtime_error("baselines: cannot create " + folder + ": " + error.message());
  std::set<std::string> written;
  for (const RunRecord& record : records) {
    if (record.device.kind != device || record.scale != scale) {
      throw std::runtime_error("baselines: records of " + device + "/" + scale + " and " +
                               record.device.kind + "/" + record.scale + " go in different folders");
    }
    const std::string name = record.scenario + "." + record.variant + ".json";
    write_file_atomically(folder + "/" + name, baseline_json(record).dump(2) + "\n");
    written.insert(name);
  }
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && entry.path().extension() == ".json" && !written.count(name) &&
        written_by_oomlab(entry.path())) {
      fs::remove(entry.path(), error);
    }
  }
  return folder;
}

std::vector<std::string> update_baselines(const std::vector<RunRecord>& records) {
  std::vector<std::pair<std::string, std::vector<RunRecord>>> groups;  // by "<device>-<scale>"
  for (const RunRecord& record : records) {
    const std::string key = record.device.kind + "-" + record.scale;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& group) { return group.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back(record);
  }
  std::vector<std::string> folders;
  for (const auto& [key, group] : groups) folders.push_back(write_baselines(baselines_root(), group));
  return folders;
}

}  // namespace oomlab::report
