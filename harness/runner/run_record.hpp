// The JSON record of one variant run (docs/results-schema.md). Schema version 3; versions 1
// (before `warmup_steps`) and 2 (before `warnings`, `knobs`, `memory.need`) are still read.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace oomlab {

constexpr int kRunRecordSchemaVersion = 3;
// The oldest version run_record_from_json reads: 1 lacks warmup_steps (read as 0).
constexpr int kOldestReadableRunRecordSchemaVersion = 1;

enum class OutcomeStatus { ok, oom, crash, error };
const char* outcome_status_name(OutcomeStatus status);
std::optional<OutcomeStatus> parse_outcome_status(std::string_view name);

struct DeviceRecord {
  std::string kind;                // "cuda", "host", "dry"
  std::string name;
  std::string compute_capability;  // "9.0"; empty off cuda
  std::uint64_t total_memory = 0;
  int driver_version = 0;
  int runtime_version = 0;
  // cuda only (empty elsewhere, and in records written before them): the architectures the
  // binary was built for, the image the driver runs ("sm_90a", "compute_80 PTX (JIT)") and the
  // engine of each kernel family ("conv": "wgmma"), so a comparison across GPUs says what ran.
  std::string built_for;
  std::string image;
  std::map<std::string, std::string> engines;
};

struct BudgetRecord {
  std::uint64_t bytes = 0;
  std::string profile;  // empty when given as a size
  std::string text;     // "rtx3060-12g (11.50GiB)" or "64.00MiB"
};

struct Outcome {
  OutcomeStatus status = OutcomeStatus::error;
  std::string diagnosis;   // oom: capacity | fragmentation | external | leak; else empty
  std::int64_t step = -1;  // step the run ended in (oom, error); -1 when not in a step
  std::string message;     // the OOM or error message; empty for ok
  int signal = 0;          // crash: the signal number
};

struct MemoryRecord {
  std::uint64_t peak_allocated = 0;
  std::uint64_t peak_reserved = 0;
  std::uint64_t peak_device_used = 0;  // from the device monitor
  // What the run needs: its peak of live bytes with no cap, from a plan of the same run on dry
  // with no budget (so an OOM run's need is known too), and the allocator's reserved peak in
  // that plan. 0: unknown (the plan failed).
  std::uint64_t need = 0;
  std::uint64_t need_reserved = 0;
  std::map<std::string, std::uint64_t> per_tag_peak;
  std::uint64_t num_ooms = 0;
  std::uint64_t num_alloc_retries = 0;
};

struct Throughput {
  double value = 0;
  std::string unit;  // empty when the scenario reported no work
};

inline constexpr const char* kTraceNotWritten = "trace not written: ";
inline constexpr const char* kOomDumpNotWritten = "OOM dump not written: ";

struct RunRecord {
  int schema_version = kRunRecordSchemaVersion;
  std::string scenario;
  std::string variant;
  DeviceRecord device;
  BudgetRecord budget;
  std::string scale;
  // Every knob's value for this run (the variant's, then --set), as text: "batch" -> "24".
  std::map<std::string, std::string> knobs;
  int steps = 0;  // steps requested
  Outcome outcome;
  MemoryRecord memory;
  Throughput throughput;
  std::vector<double> step_seconds;  // every completed step, the warm-up ones too
  // Leading steps the scenario called warm-up: the throughput and the profile_ms.* metrics
  // leave them out (docs/results-schema.md says when they cannot).
  int warmup_steps = 0;
  std::map<std::string, double> metrics;  // finite values only (JSON has no NaN)
  // What went wrong around the run without changing its outcome: a trace that could not be
  // written, a metric that was not a number and was left out.
  std::vector<std::string> warnings;  // a failed trace write starts with kTraceNotWritten
  std::string alloc_conf;
  std::string expected = "ok";  // the story: "ok", "oom" or "error"
  bool matches_expectation = false;
  std::string git_commit;
  std::string timestamp;  // ISO-8601 UTC, "2025-01-31T12:00:00Z"
  std::string oomlab_version;
};

bool operator==(const DeviceRecord& a, const DeviceRecord& b);
bool operator==(const BudgetRecord& a, const BudgetRecord& b);
bool operator==(const Outcome& a, const Outcome& b);
bool operator==(const MemoryRecord& a, const MemoryRecord& b);
bool operator==(const Throughput& a, const Throughput& b);
bool operator==(const RunRecord& a, const RunRecord& b);
inline bool operator!=(const RunRecord& a, const RunRecord& b) { return !(a == b); }

// The story holds when the outcome's status is the one expected. A crash never matches.
bool outcome_matches(std::string_view expected, OutcomeStatus status);

nlohmann::ordered_json to_json(const RunRecord& record);
// Throws std::runtime_error naming the field on a missing or mistyped field or a schema_version
// it does not read.
RunRecord run_record_from_json(const nlohmann::ordered_json& json);
RunRecord run_record_from_text(const std::string& text);

// Build facts the record carries.
std::string git_commit();      // OOMLAB_GIT_COMMIT if set, else the commit CMake configured at
std::string oomlab_version();  // the project version, "0.1.0"
std::string utc_timestamp();   // now, ISO-8601 UTC

}  // namespace oomlab
