// oomlab report DIR [-o report.md]: the Markdown report of a result set, with its SVG charts in
// a `charts` folder beside the page (harness/report/markdown_report.hpp). A record's allocator
// trace is the one written beside it (<record>.trace.json), else a dry re-run of the same
// scenario, variant, scale, budget, knobs and allocator settings (the allocation sequence is the
// same on every device), else its OOM dump (<record>.oom.json: the last events only). A replay's
// record (oomlab replay --out) is never re-run: its trace is the one `replay --trace` wrote beside it.
//
// Records are input and oomlab may run as root: a re-run writes only inside a private folder
// (TempDirectory), runs only settings a record of its scenario can honestly hold, and all
// re-runs share one time budget (rerun_policy.hpp); chart names are made safe (file_stem.hpp).
// -o names the page, a regular file or a new one: the charts go in a folder beside it, which a
// device such as /dev/null has not, so anything else is refused.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "harness/cli/commands.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/user_text.hpp"
#include "harness/report/input_error.hpp"
#include "harness/report/markdown_report.hpp"
#include "harness/report/rerun_policy.hpp"
#include "harness/report/result_set.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/runner.hpp"
#include "harness/runner/temp_directory.hpp"

namespace oomlab::cli {

struct ReportOptions {
  std::string dir;          // a result set: a folder of records (or one file)
  std::string output;       // the Markdown page; empty: DIR/report.md. Charts go in charts/ beside it
  bool no_rerun = false;    // only traces found beside the records: no dry re-runs
};

namespace {

namespace fs = std::filesystem;

// Enough for every event of the longest story at full scale (gpt_train grad-accum: ~85k).
constexpr const char* kRerunTraceCapacity = "trace_capacity:16777216";
// What all of one report's dry re-runs may take together.
constexpr std::chrono::seconds kRerunTotal{600};

fs::path record_folder(const std::string& source) {
  return fs::is_directory(source) ? fs::path(source) : fs::path(source).parent_path();
}

fs::path beside(const fs::path& folder, const report::LoadedRecord& loaded, const std::string& suffix) {
  fs::path stem = folder / loaded.file;
  stem.replace_extension();
  return fs::path(stem.string() + suffix);
}

std::optional<report::TraceSource> read_if_present(const fs::path& path, const std::string& origin) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) return std::nullopt;
  return report::TraceSource{report::read_trace_file(path.string()), origin};
}

// While it lives, this process's stderr (which a child inherits) goes to /dev/null: a re-run's
// notes and OOM messages were already read in its record.
class QuietStderr {
 public:
  QuietStderr() : saved_(::dup(2)) {
    std::fflush(stderr);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, 2);
      ::close(null);
    }
  }
  ~QuietStderr() {
    std::fflush(stderr);
    if (saved_ >= 0) {
      ::dup2(saved_, 2);
      ::close(saved_);
    }
  }
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;

 private:
  int saved_;
};

// The record's run again on dry with a trace that keeps every event, its trace written in
// `scratch` (private: TempDirectory) under a fixed name, never one made of record fields.
std::optional<report::TraceSource> rerun_on_dry(const RunRecord& r, const fs::path& scratch,
                                                const report::RerunBudget& budget, std::string& why_not) {
  if (const std::string why = report::why_not_rerun(r); !why.empty()) {
    why_not = "not re-run: " + why;
    return std::nullopt;
  }
  const double seconds_left = budget.seconds_left();
  if (seconds_left < 1) {
    why_not = "not re-run: the " + std::to_string(budget.total().count()) +
              " s all re-runs of a report may take are spent (oomlab run --trace writes a trace beside a record)";
    return std::nullopt;
  }
  RunRequest request;
  request.scenario = r.scenario;
  request.variant = r.variant;
  request.device = DeviceKind::dry;
  const auto scale = parse_scale(r.scale);
  if (!scale) {
    why_not = "unknown scale '" + r.scale + "'";
    return std::nullopt;
  }
  request.scale = *scale;
  request.budget = r.budget.bytes == memory::AllocatorConfig::kUnlimited ? "unlimited"
                   : !r.budget.profile.empty()                          ? r.budget.profile
                                                                       : std::to_string(r.budget.bytes) + "B";
  request.steps = r.steps;
  request.alloc_conf = r.alloc_conf + (r.alloc_conf.empty() ? "" : ",") + kRerunTraceCapacity;
  for (const auto& [knob, value] : r.knobs) request.set.emplace_back(knob, value);
  request.trace_path = (scratch / "rerun.trace.json").string();
  request.progress = false;
  request.timeout_seconds = seconds_left;
  RunRecord rerun;
  {
    QuietStderr quiet;
    rerun = run_variant_in_child(request);
  }
  std::error_code error;
  if (!fs::is_regular_file(request.trace_path, error)) {
    why_not = "the dry re-run gave no trace (" + std::string(outcome_status_name(rerun.outcome.status)) +
              (rerun.outcome.message.empty() ? "" : ": " + rerun.outcome.message) + ")";
    return std::nullopt;
  }
  report::TraceSource source{report::read_trace_file(request.trace_path), "a dry re-run of each variant's settings"};
  fs::remove(request.trace_path, error);
  return source;
}

// -o is the page: a regular file (links followed) or a new one, never a device, FIFO or folder.
void require_page_path(const fs::path& output) {
  std::error_code error;
  const fs::file_status status = fs::status(output, error);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    throw UsageError("-o " + printable_text(output.string()) +
                     ": not a regular file; -o names the Markdown page (a new or regular .md file), and the "
                     "charts go in a charts/ folder beside it");
  }
}

}  // namespace

int report_command(const ReportOptions& options) {
  report::ResultSet set;
  try {
    set = report::load_result_set(options.dir);
  } catch (const report::InputError& e) {
    throw UsageError(printable_text(e.what()));  // names and values from the files: one line
  }
  const fs::path output = options.output.empty() ? record_folder(options.dir) / "report.md" : fs::path(options.output);
  const fs::path charts = output.parent_path() / "charts";
  require_page_path(output);
  std::error_code error;
  if (!output.parent_path().empty()) fs::create_directories(output.parent_path(), error);
  require_writable("-o", output.string());
  const fs::path folder = record_folder(options.dir);
  std::optional<TempDirectory> scratch;  // made at the first re-run
  const report::RerunBudget rerun_budget(kRerunTotal);

  bool announced = false;
  const report::TraceProvider traces = [&](const report::LoadedRecord& loaded, std::string& why_not)
      -> std::optional<report::TraceSource> {
    try {
      if (auto trace = read_if_present(beside(folder, loaded, ".trace.json"), "the trace written beside each record"))
        return trace;
      const std::string why_no_rerun = report::why_not_rerun(loaded.record);
      if (!options.no_rerun && !why_no_rerun.empty()) {
        why_not = "no trace beside the record, and " + why_no_rerun;
      } else if (!options.no_rerun) {
        if (!announced) {
          std::fprintf(stderr, "oomlab: report: re-running variants on dry for the timelines of records with no trace "
                               "beside them (--no-rerun skips this)\n");
          announced = true;
        }
        if (!scratch) scratch.emplace("oomlab-report-");
        if (auto trace = rerun_on_dry(loaded.record, scratch->path(), rerun_budget, why_not)) return trace;
      } else {
        why_not = "no trace beside the record (--no-rerun)";
      }
      if (loaded.record.outcome.status == OutcomeStatus::oom) {
        return read_if_present(beside(folder, loaded, ".oom.json"), "the OOM dump beside the record (its last events)");
      }
    } catch (const report::InputError& e) {
      why_not = e.what();
    } catch (const std::runtime_error& e) {  // no private folder could be made (TMPDIR)
      why_not = e.what();
    }
    return std::nullopt;
  };
  const report::ReportFiles files = report::build_report(set, traces, "charts");
  scratch.reset();

  fs::create_directories(charts, error);
  if (error || !fs::is_directory(charts)) {
    throw UsageError("-o " + printable_text(output.string()) + ": cannot create " + printable_text(charts.string()) +
                     " (" + (error ? error.message() : "not a folder") + ")");
  }
  try {
    for (const auto& [name, svg] : files.charts) write_file_atomically((charts / name).string(), svg);
    write_file_atomically(output.string(), files.markdown);
  } catch (const std::runtime_error& e) {
    throw UsageError(printable_text(e.what()));
  }
  std::fprintf(stderr, "oomlab: report written to %s (%zu charts in %s)\n", printable_text(output.string()).c_str(),
               files.charts.size(), printable_text(charts.string()).c_str());
  return 0;
}

Command add_report_command(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* report = app.add_subcommand(
      "report", "Write a Markdown report of a result set with SVG charts: the memory timeline of each "
                "variant stacked by tag with the budget and the OOM, the segments at the peak, peaks and "
                "throughput across variants and GPUs. Exit 0, 2 on bad input");
  report->add_option("DIR", options->dir, "A folder of run records (a suite folder, results/h200)")->required();
  report->add_option("-o,--output", options->output, "The Markdown page (default DIR/report.md): a regular "
                     "or new file, not a device or a folder; the charts go in charts/ beside it");
  report->add_flag("--no-rerun", options->no_rerun,
                   "Use only the traces beside the records (<record>.trace.json, .oom.json); without "
                   "this a record with none is re-run on dry for its timeline");
  return {report, [options] { return report_command(*options); }, [options] { return !options->no_rerun; }};
}

}  // namespace oomlab::cli
