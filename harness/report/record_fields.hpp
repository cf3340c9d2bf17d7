// The deterministic fields of a run record, flattened in reading order: what a baseline keeps,
// what the regression test compares exactly, and how a change in one reads
// ("oom step 14 -> 20", "peak_allocated 12.70GiB -> 12.71GiB (+1.00MiB)").
//
// Deterministic means: the same on every run of the same build on dry (and, at allocator level,
// on host and cuda). Timings, timestamps, the commit, the machine's name and throughput are
// not; neither is a metric whose name says it is a time or a share of time (is_timing_metric).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/runner/run_record.hpp"

namespace oomlab::report {

struct FieldValue {
  enum class Kind { text, bytes, integer, number };
  Kind kind = Kind::text;
  std::string text;         // text
  std::uint64_t whole = 0;  // bytes, integer (a budget can be 2^64-1: doubles would round it)
  double number = 0;        // number (a metric)

  static FieldValue of_text(std::string text);
  static FieldValue of_bytes(std::uint64_t bytes);
  static FieldValue of_integer(std::int64_t value);  // a negative value is stored as text
  static FieldValue of_number(double value);
  bool operator==(const FieldValue& other) const;
  bool operator!=(const FieldValue& other) const { return !(*this == other); }
};

using FieldList = std::vector<std::pair<std::string, FieldValue>>;

// Names: outcome, diagnosis, oom step (or "step" for an error), signal, message, expected,
// budget, budget profile, steps, warm-up steps, alloc_conf, knob <name>, peak_allocated,
// peak_reserved, peak_device_used (not on cuda: measured there), need, need_reserved, peak of tag <tag>,
// num_ooms, num_alloc_retries, metric <name> (not timings), warning <n>. Messages and warnings
// are compared without_process_ids.
FieldList deterministic_fields(const RunRecord& record);

// `text` with process ids blanked ("worker 0 (pid 21243)" -> "worker 0 (pid N)"): a message
// that names a process is otherwise deterministic.
std::string without_process_ids(std::string text);

// "empty_cache_seconds", "profile_ms.fwd.attention", "batch_wait_ms", "gpu_idle_fraction",
// "samples_per_second": measured, so different on every run.
bool is_timing_metric(std::string_view name);

// "oom @ step 14 (leak)", "ok", "crash (signal 9)": an outcome on one line.
std::string describe_outcome(const Outcome& outcome);

// How a value reads: "12.70GiB", "unlimited", "14", "0.0123", "oom".
std::string format_field(const std::string& name, const FieldValue& value);

// One change, as a person reads it: "oom step 14 -> 20",
// "peak_allocated 12.70GiB -> 12.71GiB (+1.00MiB)", "peak of tag retained 7.03GiB -> (none)".
// A null pointer is a field one side does not have.
std::string describe_change(const std::string& name, const FieldValue* before,
                            const FieldValue* after);

// Which fields field_differences compares: all of them, or those the allocator decides, which
// must agree between devices (a dry prediction and a cuda run): not the message, warnings,
// metrics (losses exist only where kernels run) or the device-level peak.
enum class FieldScope { all, allocator };
bool in_scope(const std::string& name, FieldScope scope);

// Every deterministic field in `scope` that differs, each described; empty when they agree.
std::vector<std::string> field_differences(const RunRecord& before, const RunRecord& after,
                                           FieldScope scope = FieldScope::all);

}  // namespace oomlab::report
