// oomlab report DIR [-o report.md]: the Markdown report of a result set, with its SVG charts in
// a `charts` folder beside the page (harness/report/markdown_report.hpp). A record's allocator
// trace is the one written beside it (<record>.trace.json), else a dry re-run of the same
// scenario, variant, scale, budget, knobs and allocator settings (the allocation sequence is the
// same on every device), else its OOM dump (<record>.oom.json: the last events only).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "harness/cli/commands.hpp"
#include "harness/memory/size.hpp"
#include "harness/report/input_error.hpp"
#include "harness/report/markdown_report.hpp"
#include "harness/report/result_set.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/runner.hpp"

namespace oomlab::cli {

namespace {

namespace fs = std::filesystem;

// Enough for every event of the longest story at full scale (gpt_train grad-accum: ~85k).
constexpr const char* kRerunTraceCapacity = "trace_capacity:16777216";

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

// The record's run again on dry with a trace that keeps every event.
std::optional<report::TraceSource> rerun_on_dry(const RunRecord& r, const fs::path& scratch, std::string& why_not) {
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
  request.trace_path = (scratch / (r.scenario + "." + r.variant + "." + r.scale + ".trace.json")).string();
  request.progress = false;
  request.timeout_seconds = 600;
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

}  // namespace

int report_command(const ReportOptions& options) {
  report::ResultSet set;
  try {
    set = report::load_result_set(options.dir);
  } catch (const report::InputError& e) {
    throw UsageError(e.what());
  }
  const fs::path output = options.output.empty() ? record_folder(options.dir) / "report.md" : fs::path(options.output);
  const fs::path charts = output.parent_path() / "charts";
  std::error_code error;
  if (!output.parent_path().empty()) fs::create_directories(output.parent_path(), error);
  require_writable("-o", output.string());
  const fs::path folder = record_folder(options.dir);
  const fs::path scratch = fs::temp_directory_path(error) / ("oomlab-report-" + std::to_string(::getpid()));
  fs::create_directories(scratch, error);

  bool announced = false;
  const report::TraceProvider traces = [&](const report::LoadedRecord& loaded, std::string& why_not)
      -> std::optional<report::TraceSource> {
    try {
      if (auto trace = read_if_present(beside(folder, loaded, ".trace.json"), "the trace written beside each record")) return trace;
      if (!options.no_rerun) {
        if (!announced) {
          std::fprintf(stderr, "oomlab: report: re-running variants on dry for the timelines of records with no trace "
                               "beside them (--no-rerun skips this)\n");
          announced = true;
        }
        if (auto trace = rerun_on_dry(loaded.record, scratch, why_not)) return trace;
      } else {
        why_not = "no trace beside the record (--no-rerun)";
      }
      if (loaded.record.outcome.status == OutcomeStatus::oom) {
        return read_if_present(beside(folder, loaded, ".oom.json"), "the OOM dump beside the record (its last events)");
      }
    } catch (const report::InputError& e) {
      why_not = e.what();
    }
    return std::nullopt;
  };
  const report::ReportFiles files = report::build_report(set, traces, "charts");
  fs::remove_all(scratch, error);

  fs::create_directories(charts, error);
  if (error) throw UsageError("-o " + output.string() + ": cannot create " + charts.string() + " (" + error.message() + ")");
  try {
    for (const auto& [name, svg] : files.charts) write_file_atomically((charts / name).string(), svg);
    write_file_atomically(output.string(), files.markdown);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  std::fprintf(stderr, "oomlab: report written to %s (%zu charts in %s)\n", output.c_str(), files.charts.size(),
               charts.c_str());
  return 0;
}

}  // namespace oomlab::cli
