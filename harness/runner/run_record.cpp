#include "harness/runner/run_record.hpp"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace oomlab {

using Json = nlohmann::ordered_json;

const char* outcome_status_name(OutcomeStatus status) {
  switch (status) {
    case OutcomeStatus::ok: return "ok";
    case OutcomeStatus::oom: return "oom";
    case OutcomeStatus::crash: return "crash";
    case OutcomeStatus::error: return "error";
  }
  return "unknown";
}

std::optional<OutcomeStatus> parse_outcome_status(std::string_view name) {
  for (auto status : {OutcomeStatus::ok, OutcomeStatus::oom, OutcomeStatus::crash,
                      OutcomeStatus::error}) {
    if (name == outcome_status_name(status)) return status;
  }
  return std::nullopt;
}

bool operator==(const DeviceRecord& a, const DeviceRecord& b) {
  return a.kind == b.kind && a.name == b.name && a.compute_capability == b.compute_capability &&
         a.total_memory == b.total_memory && a.driver_version == b.driver_version &&
         a.runtime_version == b.runtime_version && a.built_for == b.built_for && a.image == b.image &&
         a.engines == b.engines;
}
bool operator==(const BudgetRecord& a, const BudgetRecord& b) {
  return a.bytes == b.bytes && a.profile == b.profile && a.text == b.text;
}
bool operator==(const Outcome& a, const Outcome& b) {
  return a.status == b.status && a.diagnosis == b.diagnosis && a.step == b.step &&
         a.message == b.message && a.signal == b.signal;
}
bool operator==(const MemoryRecord& a, const MemoryRecord& b) {
  return a.peak_allocated == b.peak_allocated && a.peak_reserved == b.peak_reserved &&
         a.peak_device_used == b.peak_device_used && a.need == b.need &&
         a.need_reserved == b.need_reserved && a.per_tag_peak == b.per_tag_peak &&
         a.num_ooms == b.num_ooms && a.num_alloc_retries == b.num_alloc_retries;
}
bool operator==(const Throughput& a, const Throughput& b) {
  return a.value == b.value && a.unit == b.unit;
}
bool operator==(const RunRecord& a, const RunRecord& b) {
  return a.schema_version == b.schema_version && a.scenario == b.scenario &&
         a.variant == b.variant && a.device == b.device && a.budget == b.budget &&
         a.scale == b.scale && a.knobs == b.knobs && a.steps == b.steps && a.outcome == b.outcome &&
         a.memory == b.memory && a.throughput == b.throughput &&
         a.step_seconds == b.step_seconds && a.warmup_steps == b.warmup_steps &&
         a.metrics == b.metrics && a.warnings == b.warnings &&
         a.alloc_conf == b.alloc_conf && a.expected == b.expected &&
         a.matches_expectation == b.matches_expectation && a.git_commit == b.git_commit &&
         a.timestamp == b.timestamp && a.oomlab_version == b.oomlab_version;
}

bool outcome_matches(std::string_view expected, OutcomeStatus status) {
  return status != OutcomeStatus::crash && expected == outcome_status_name(status);
}

namespace {

// Absent values are JSON null rather than magic numbers, so readers need not know them.
Json string_or_null(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

Json to_json(const Outcome& outcome) {
  Json json;
  json["status"] = outcome_status_name(outcome.status);
  json["diagnosis"] = string_or_null(outcome.diagnosis);
  json["step"] = outcome.step >= 0 ? Json(outcome.step) : Json(nullptr);
  json["message"] = string_or_null(outcome.message);
  json["signal"] = outcome.signal != 0 ? Json(outcome.signal) : Json(nullptr);
  return json;
}

// Reads json[key] as T, naming the field (with its path) when it is missing or mistyped.
template <class T>
T field(const Json& json, const char* key, const std::string& path) {
  auto it = json.find(key);
  if (it == json.end()) throw std::runtime_error("run record: missing field " + path + key);
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("run record: field " + path + key + ": " + e.what());
  }
}

template <class T>
T field_or(const Json& json, const char* key, const std::string& path, T absent) {
  auto it = json.find(key);
  if (it == json.end()) throw std::runtime_error("run record: missing field " + path + key);
  if (it->is_null()) return absent;
  return field<T>(json, key, path);
}

// A field that may be absent (written only where it applies) as well as null.
template <class T>
T optional_field(const Json& json, const char* key, const std::string& path, T absent) {
  return json.contains(key) ? field_or<T>(json, key, path, std::move(absent)) : absent;
}

const Json& object(const Json& json, const char* key, const std::string& path) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_object()) {
    throw std::runtime_error("run record: field " + path + key + " must be an object");
  }
  return *it;
}

}  // namespace

Json to_json(const RunRecord& r) {
  Json json;
  json["schema_version"] = r.schema_version;
  json["scenario"] = r.scenario;
  json["variant"] = r.variant;
  json["device"] = {{"kind", r.device.kind},
                    {"name", r.device.name},
                    {"compute_capability", string_or_null(r.device.compute_capability)},
                    {"total_memory", r.device.total_memory},
                    {"driver_version", r.device.driver_version},
                    {"runtime_version", r.device.runtime_version}};
  if (!r.device.built_for.empty()) json["device"]["built_for"] = r.device.built_for;
  if (!r.device.image.empty()) json["device"]["image"] = r.device.image;
  if (!r.device.engines.empty()) json["device"]["engines"] = r.device.engines;
  json["budget"] = {{"bytes", r.budget.bytes},
                    {"profile", string_or_null(r.budget.profile)},
                    {"text", r.budget.text}};
  json["scale"] = r.scale;
  json["knobs"] = r.knobs;
  json["steps"] = r.steps;
  json["outcome"] = to_json(r.outcome);
  Json per_tag = Json::object();
  for (const auto& [tag, bytes] : r.memory.per_tag_peak) per_tag[tag] = bytes;
  json["memory"] = {{"peak_allocated", r.memory.peak_allocated},
                    {"peak_reserved", r.memory.peak_reserved},
                    {"peak_device_used", r.memory.peak_device_used},
                    {"need", r.memory.need != 0 ? Json(r.memory.need) : Json(nullptr)},
                    {"need_reserved", r.memory.need_reserved != 0 ? Json(r.memory.need_reserved) : Json(nullptr)},
                    {"per_tag_peak", per_tag},
                    {"num_ooms", r.memory.num_ooms},
                    {"num_alloc_retries", r.memory.num_alloc_retries}};
  json["throughput"] = {{"value", std::isfinite(r.throughput.value) ? Json(r.throughput.value) : Json(nullptr)},
                        {"unit", string_or_null(r.throughput.unit)}};
  json["step_seconds"] = r.step_seconds;
  json["warmup_steps"] = r.warmup_steps;
  Json metrics = Json::object();
  // A non-finite number would be written as null and lose the record for a strict reader.
  for (const auto& [name, value] : r.metrics) metrics[name] = std::isfinite(value) ? Json(value) : Json(nullptr);
  json["metrics"] = metrics;
  json["warnings"] = r.warnings;
  json["alloc_conf"] = r.alloc_conf;
  json["expected"] = r.expected;
  json["matches_expectation"] = r.matches_expectation;
  json["git_commit"] = r.git_commit;
  json["timestamp"] = r.timestamp;
  json["oomlab_version"] = r.oomlab_version;
  return json;
}

RunRecord run_record_from_json(const Json& json) {
  if (!json.is_object()) throw std::runtime_error("run record: not a JSON object");
  // An older version is read as the current one saying the same (r.schema_version stays current).
  RunRecord r;
  const int version = field<int>(json, "schema_version", "");
  if (version < kOldestReadableRunRecordSchemaVersion || version > kRunRecordSchemaVersion) {
    throw std::runtime_error("run record: schema_version " + std::to_string(version) +
                             " is not supported (this oomlab reads versions " +
                             std::to_string(kOldestReadableRunRecordSchemaVersion) + " to " +
                             std::to_string(kRunRecordSchemaVersion) + ")");
  }
  r.scenario = field<std::string>(json, "scenario", "");
  r.variant = field<std::string>(json, "variant", "");

  const Json& device = object(json, "device", "");
  r.device.kind = field<std::string>(device, "kind", "device.");
  r.device.name = field<std::string>(device, "name", "device.");
  r.device.compute_capability =
      field_or<std::string>(device, "compute_capability", "device.", "");
  r.device.total_memory = field<std::uint64_t>(device, "total_memory", "device.");
  r.device.driver_version = field<int>(device, "driver_version", "device.");
  r.device.runtime_version = field<int>(device, "runtime_version", "device.");
  r.device.built_for = optional_field<std::string>(device, "built_for", "device.", "");
  r.device.image = optional_field<std::string>(device, "image", "device.", "");
  r.device.engines = optional_field<std::map<std::string, std::string>>(device, "engines", "device.", {});

  const Json& budget = object(json, "budget", "");
  r.budget.bytes = field<std::uint64_t>(budget, "bytes", "budget.");
  r.budget.profile = field_or<std::string>(budget, "profile", "budget.", "");
  r.budget.text = field<std::string>(budget, "text", "budget.");

  r.scale = field<std::string>(json, "scale", "");
  if (version >= 3) r.knobs = field<std::map<std::string, std::string>>(json, "knobs", "");
  r.steps = field<int>(json, "steps", "");

  const Json& outcome = object(json, "outcome", "");
  auto status_text = field<std::string>(outcome, "status", "outcome.");
  auto status = parse_outcome_status(status_text);
  if (!status) throw std::runtime_error("run record: outcome.status '" + status_text + "'");
  r.outcome.status = *status;
  r.outcome.diagnosis = field_or<std::string>(outcome, "diagnosis", "outcome.", "");
  r.outcome.step = field_or<std::int64_t>(outcome, "step", "outcome.", -1);
  r.outcome.message = field_or<std::string>(outcome, "message", "outcome.", "");
  r.outcome.signal = field_or<int>(outcome, "signal", "outcome.", 0);

  const Json& memory = object(json, "memory", "");
  r.memory.peak_allocated = field<std::uint64_t>(memory, "peak_allocated", "memory.");
  r.memory.peak_reserved = field<std::uint64_t>(memory, "peak_reserved", "memory.");
  r.memory.peak_device_used = field<std::uint64_t>(memory, "peak_device_used", "memory.");
  if (version >= 3) {
    r.memory.need = field_or<std::uint64_t>(memory, "need", "memory.", 0);
    r.memory.need_reserved = field_or<std::uint64_t>(memory, "need_reserved", "memory.", 0);
  }
  r.memory.per_tag_peak =
      field<std::map<std::string, std::uint64_t>>(memory, "per_tag_peak", "memory.");
  r.memory.num_ooms = field<std::uint64_t>(memory, "num_ooms", "memory.");
  r.memory.num_alloc_retries = field<std::uint64_t>(memory, "num_alloc_retries", "memory.");

  const Json& throughput = object(json, "throughput", "");
  r.throughput.value = field_or<double>(throughput, "value", "throughput.", 0);
  r.throughput.unit = field_or<std::string>(throughput, "unit", "throughput.", "");

  r.step_seconds = field<std::vector<double>>(json, "step_seconds", "");
  // Version 1 had no warm-up: its throughput was over every step, as warmup_steps 0 means now.
  r.warmup_steps = version >= 2 ? field<int>(json, "warmup_steps", "") : 0;
  if (r.warmup_steps < 0) throw std::runtime_error("run record: field warmup_steps is negative");
  // A null metric (a NaN written by an older oomlab) is left out rather than losing the record.
  for (const auto& [name, value] : object(json, "metrics", "").items()) {
    if (value.is_null()) continue;
    if (!value.is_number()) throw std::runtime_error("run record: field metrics." + name + " is not a number");
    r.metrics[name] = value.get<double>();
  }
  r.warnings = version >= 3 ? field<std::vector<std::string>>(json, "warnings", "")
                            : std::vector<std::string>{};
  r.alloc_conf = field<std::string>(json, "alloc_conf", "");
  r.expected = field<std::string>(json, "expected", "");
  r.matches_expectation = field<bool>(json, "matches_expectation", "");
  r.git_commit = field<std::string>(json, "git_commit", "");
  r.timestamp = field<std::string>(json, "timestamp", "");
  r.oomlab_version = field<std::string>(json, "oomlab_version", "");
  return r;
}

RunRecord run_record_from_text(const std::string& text) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("run record: not valid JSON: ") + e.what());
  }
  return run_record_from_json(json);
}

}  // namespace oomlab
