// Regression baselines: one JSON file per variant under results/baselines/<device>-<scale>/,
// holding the deterministic fields of its run record (record_fields.hpp) and nothing measured
// (no timings, throughput, timestamp, commit or machine name), so regenerating them after a
// change shows in `git diff` exactly what changed.
//
// Regenerate: oomlab suite --device dry --scale full --update-baselines   (and --scale small)
// The folder is $OOMLAB_BASELINES when set, else results/baselines under the current folder.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/runner/run_record.hpp"

namespace oomlab::report {

// The key that marks a baseline file; its value is the regeneration command.
inline constexpr const char* kBaselineKey = "baseline";

// $OOMLAB_BASELINES, else "results/baselines" (relative: run from the repository root).
std::string baselines_root();
// "<root>/dry-full".
std::string baseline_folder(const std::string& root, const std::string& device, const std::string& scale);
// "oomlab suite --device dry --scale full --update-baselines".
std::string regenerate_command(const std::string& device, const std::string& scale);

nlohmann::ordered_json baseline_json(const RunRecord& record);
bool is_baseline_json(const nlohmann::ordered_json& json);
// The record a baseline describes: its deterministic fields as written, the rest empty.
// Throws std::runtime_error naming the bad field.
RunRecord record_from_baseline(const nlohmann::ordered_json& json);

// Writes one baseline per record into <root>/<device>-<scale>/ (records of one device and
// scale), and removes the JSON files there that it did not write, so a removed variant's
// baseline goes too. Returns the folder. Throws std::runtime_error when it cannot.
std::string write_baselines(const std::string& root, const std::vector<RunRecord>& records);

// `oomlab suite --update-baselines`: write_baselines(baselines_root(), ...) for each device and
// scale the records ran on. Returns the folders written.
std::vector<std::string> update_baselines(const std::vector<RunRecord>& records);

}  // namespace oomlab::report
