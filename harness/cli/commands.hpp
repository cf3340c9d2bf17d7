// The oomlab subcommands behind main.cpp's argument parsing.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace oomlab::cli {

// Bad input from the user: main prints "oomlab: error: <what>" and exits with 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ListOptions {
  std::string scenario;  // empty: every scenario
  std::string scale = "full";
  bool models = false;   // the model presets instead (--models)
};

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
  bool no_oom_dump = false;    // compare and report: no OOM dump beside --out
};

struct SuiteOptions {
  std::string device;  // empty: the default plan (see suite_command.cpp)
  std::string scale;   // empty: the plan's scale per device
  std::string out_dir = "results/latest";
  double timeout_seconds = 1800;  // per variant: a hung variant must not hold up the suite
  bool update_baselines = false;  // compare and report: rewrite $OOMLAB_BASELINES/<device>-<scale>
  bool no_oom_dump = false;       // compare and report: no <record>.oom.json on an OOM
};

// Each returns the process exit code; bad input throws UsageError.
int list_command(const ListOptions& options);
int run_command(const RunOptions& options);
int suite_command(const SuiteOptions& options);

// --- the user's questions: bisect and advise (harness/advise) ---
// What bisect and advise take from run's options: the run to ask about.
struct QuestionOptions {
  std::string scenario;
  std::string variant;                 // empty: the scenario's first variant that runs out of memory
  std::string device = "dry";          // where the search runs is always dry; cuda/host confirm
  std::string scale = "full";
  std::string budget;                  // empty: the scenario's at the scale
  std::vector<std::string> set;
  std::string alloc_conf;
  int steps = 0;                       // 0: the scenario's default at the scale
  std::string out_path;                // a record of the answer
  bool json = false;
};
struct BisectOptions : QuestionOptions {
  std::string knob;  // empty: the smallest budget; else the largest value of this knob that fits
};
int bisect_command(const BisectOptions& options);
struct AdviseCliOptions : QuestionOptions {
  bool confirm = false;     // run each fitting candidate on the GPU for its throughput
  std::string results_dir;  // committed records for costs (default: results/<this GPU>)
};
// Exit 0 when a fix fits (or the run fits as given), 1 when none does, 2 on bad input.
int advise_command(const AdviseCliOptions& options);
// --- end bisect and advise ---

// --- doctor (doctor_command.cpp): this machine's side of an OOM; exit 1 if a check fails ---
struct DoctorOptions {
  bool json = false;  // the table's fields as JSON, for tools
};
int doctor_command(const DoctorOptions& options);
// --- end doctor ---

// --- compare and report (compare_command.cpp, report_command.cpp; harness/report) ---
struct CompareOptions {
  std::string a, b;              // result sets: record files, folders, baselines, benchmark JSON
  std::string threshold = "2%";  // a relative change smaller than this is "same"
  std::string metrics;           // comma-separated; empty: outcome, peak, throughput, all counters
  bool json = false;             // the table's fields as JSON
  bool all = false;              // also the rows that are the same
};
// Exit 1 on a regression beyond the threshold, else 0; bad input throws UsageError.
int compare_command(const CompareOptions& options);
struct ReportOptions {
  std::string dir;          // a result set: a folder of records (or one file)
  std::string output;       // the Markdown page; empty: DIR/report.md. Charts go in charts/ beside it
  bool no_rerun = false;    // only traces found beside the records: no dry re-runs
};
int report_command(const ReportOptions& options);
// --- end compare and report ---

// --- replay (replay_command.cpp; harness/replay) ---
struct ReplayCliOptions {
  std::string snapshot;     // the file torch.cuda.memory._dump_snapshot wrote (.pickle, or gzipped)
  std::string budget;       // empty: the tightest cap consistent with the trace
  std::string alloc_conf;   // over the snapshot's own settings
  std::string out_path;     // the run record
  std::string trace_path;   // oomlab's allocator trace of the replay (Chrome/Perfetto JSON)
  int device = -1;          // -1: the device that ran out of memory, else the busiest
  bool what_if = false;     // replay under each remedy too
  bool json = false;
  std::string from, to;     // the window reported: entry:N or a time since the first entry (12.5s)
};
// Exit 0 when the replay makes PyTorch's decisions (its OOM included), 1 when it diverges, 2 on
// bad input (a malformed or history-less snapshot, a bad option).
int replay_command(const ReplayCliOptions& options);
// --- end replay ---

// --- extrapolate (extrapolate_command.cpp; harness/extrapolate) ---
struct ExtrapolateCliOptions {
  std::vector<std::string> snapshots;  // recorded at the --knob values, in order
  std::string knob;                    // "batch=1,2,4"
  std::string at;                      // the value to predict at; empty with --bisect
  std::string fit = "auto";            // auto | affine | quadratic
  bool bisect = false;                 // the largest value that fits --budget
  std::string budget;                  // empty: unlimited
  std::string alloc_conf;              // over the reference snapshot's settings
  std::string out_path;                // the prediction's run record
  int device = -1;                     // -1: the device with the most allocs
  bool what_if = false;
  bool json = false;
};
// Exit 0 with a prediction (whatever its outcome) or a bisect answer, 1 when nothing fits the
// budget, 2 on bad input (a snapshot that cannot be read, recordings that do not align).
int extrapolate_command(const ExtrapolateCliOptions& options);
// --- end extrapolate ---

}  // namespace oomlab::cli

#include "harness/device/device.hpp"
#include "harness/runner/knobs.hpp"
#include "harness/runner/runner.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab::cli {

// Option values to enums, or UsageError naming the option and the valid values. A cuda
// device without a usable GPU is a UsageError too.
DeviceKind device_option(const std::string& text);
// The start-up check for a command about to run on `kind`: on cuda, a binary without code for
// this GPU is one line (built for which architectures, the GPU's capability, how to rebuild),
// thrown as a UsageError (exit 2) before any run starts. Nothing elsewhere.
DeviceKind require_code_for(DeviceKind kind);
Scale scale_option(const std::string& text);
// The --set options (each "k=v[,k=v]") as one list of settings, or UsageError.
KnobSettings knob_settings_option(const std::vector<std::string>& sets);
// The dry request a question asks about (variant chosen, everything validated), or UsageError.
RunRequest question_request(const QuestionOptions& options);
// A --timeout value: finite and >= 0 (0: no limit), else UsageError.
double timeout_option(double seconds);
// UsageError unless a file can be written at `path` (checked before any variant runs).
void require_writable(const char* option, const std::string& path);
// Throws UsageError when no private temporary folder can be made (TMPDIR names no writable
// folder): checked before any variant runs in a child, which needs one for its record.
void require_temp_directory();

}  // namespace oomlab::cli
