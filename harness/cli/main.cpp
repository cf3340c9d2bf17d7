// oomlab: list | run | suite | bisect | advise | doctor | compare | report | replay | extrapolate. Bad input is one "oomlab: error: ..." line and exit code 2.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/cli/closest_name.hpp"
#include "harness/cli/commands.hpp"
#include "harness/process/lifetime.hpp"
#include "harness/process/worker.hpp"
#include "harness/runner/runner.hpp"

namespace {

constexpr int kUsageExitCode = 2;

int usage_error(const std::string& message) {
  std::fprintf(stderr, "oomlab: error: %s\n", message.c_str());
  return kUsageExitCode;
}

// "; did you mean --variant?" for the first --option on the command line that `command` does not
// know and that is one typo away from one it knows; empty otherwise.
std::string option_suggestion(const CLI::App& command, int argc, char** argv) {
  std::vector<std::string> known;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) known.push_back("--" + name);
  }
  for (int i = 2; i < argc; ++i) {
    std::string word = argv[i];
    if (word.rfind("--", 0) != 0) continue;
    word = word.substr(0, word.find('='));
    if (std::find(known.begin(), known.end(), word) != known.end()) continue;
    const std::string near = oomlab::cli::closest_name(word, known);
    if (!near.empty()) return "; did you mean " + near + "?";
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  // Scenario workers (data-loader processes, harness/process) are this binary started again:
  // they must be dispatched before anything else runs, CUDA above all.
  int worker_exit_code = 0;
  if (oomlab::process::run_worker_if_requested(argc, argv, worker_exit_code)) {
    return worker_exit_code;
  }
  // The runner re-executes this binary once per variant with a hidden subcommand.
  if (argc > 1 && std::string(argv[1]) == oomlab::kChildCommand) {
    return oomlab::child_main(argc, argv);
  }

  CLI::App app{"oomlab: reproducible GPU out-of-memory scenarios, broken and fixed"};
  app.require_subcommand(1);

  oomlab::cli::ListOptions list_options;
  auto* list = app.add_subcommand(
      "list", "List scenarios, variants, budgets and expected outcomes; with a scenario, its knobs "
              "and each variant's values");
  list->add_option("scenario", list_options.scenario, "Show this scenario's knobs");
  list->add_option("--scale", list_options.scale, "The scale whose knob values to show (default: full)");
  list->add_flag("--models", list_options.models,
                 "The model presets --set model= takes, with parameters and weight bytes per dtype");

  oomlab::cli::RunOptions run_options;
  auto* run = app.add_subcommand(
      "run", "Run a scenario's variants, each in a child process. A plain run tests the story: exit "
             "0 iff every outcome matches its expectation, 1 otherwise. With --set, --alloc-conf, "
             "OOMLAB_ALLOC_CONF or --budget it is a question: exit 0 whatever the outcome. 2 on bad "
             "input");
  run->add_option("scenario", run_options.scenario, "Scenario name (see `oomlab list`)")
      ->required();
  run->add_option("--variant", run_options.variant, "Variant name or `all` (default: all)");
  run->add_option("--device", run_options.device,
                  "cuda | host | dry (default: cuda when a GPU exists, else host)");
  run->add_option("--scale", run_options.scale, "tiny | small | full (default: tiny)");
  auto* budget = run->add_option("--budget", run_options.budget,
                  "Size with its unit (12GiB, 512MiB, 1.5GB), a GPU profile (rtx4090; see `oomlab list`) or "
                  "unlimited (default: the scenario's)");
  auto* steps = run->add_option("--steps", run_options.steps,
                                "Steps to run (default: the scenario's at this scale)");
  run->add_option("--out", run_options.out_path,
                  "Write the record (an array for several variants) to this JSON file");
  run->add_option("--trace", run_options.trace_path,
                  "Write the allocator trace (Chrome/Perfetto JSON); with several variants "
                  "the variant name goes before the extension");
  run->add_option("--set", run_options.set,
                  "Knob values over the variant's, e.g. batch=24,dtype=bf16 (see `oomlab list "
                  "SCENARIO`); repeatable. The run is then a question: exit 0 whatever the outcome")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("--alloc-conf", run_options.alloc_conf,
                  "Allocator settings over OOMLAB_ALLOC_CONF, e.g. max_split_size_mb:128");
  run->add_option("--timeout", run_options.timeout_seconds,
                  "Kill a variant still running after this many seconds (0: no limit)");
  run->add_flag("--profile", run_options.profile,
                "Time the scenario's ranges (attention, MLP, optimizer...) on the device; print "
                "them and keep them in the record as profile_ms.<range>");
  run->add_flag("--no-oom-dump", run_options.no_oom_dump,  // compare and report
                "With --out, a variant that runs out of memory writes no OUT.<variant>.oom.json "
                "(its last allocator events and every segment at the OOM)");
  run->add_flag("--in-process", run_options.in_process,
                "Run variants in this process (debugging; a crash ends oomlab)")
      ->group("");

  oomlab::cli::SuiteOptions suite_options;
  auto* suite = app.add_subcommand(
      "suite", "Run every scenario's variants: on a GPU cuda/small + dry/full, else host/tiny + "
               "dry/full; exit 0 iff every outcome matches its expectation");
  suite->add_option("--device", suite_options.device, "Only this device: cuda | host | dry");
  suite->add_option("--scale", suite_options.scale, "Only this scale: tiny | small | full");
  suite->add_option("--timeout", suite_options.timeout_seconds,
                    "Kill a variant still running after this many seconds (default 1800; 0: none)");
  suite->add_option("--out-dir", suite_options.out_dir,
                    "Directory for one JSON per run plus suite.json (default: results/latest)");
  suite->add_flag("--no-oom-dump", suite_options.no_oom_dump,  // compare and report
                  "A variant that runs out of memory writes no <record>.oom.json beside its record");
  suite->add_flag("--update-baselines", suite_options.update_baselines,  // compare and report
                  "Also rewrite the regression baselines of the devices and scales run, in "
                  "$OOMLAB_BASELINES (default results/baselines)/<device>-<scale>/");

  // --- bisect and advise: the user's own question ---
  // The run a question is about: the same settings as `run`, searched on dry.
  const auto add_question_options = [](CLI::App* command, oomlab::cli::QuestionOptions& options) {
    command->add_option("scenario", options.scenario, "Scenario name (see `oomlab list`)")->required();
    command->add_option("--variant", options.variant,
                        "Variant (default: the scenario's first that runs out of memory)");
    command->add_option("--device", options.device,
                        "dry (default) searches on dry only; cuda or host also confirm the answer there");
    command->add_option("--scale", options.scale, "tiny | small | full (default: full)");
    command->add_option("--budget", options.budget,
                        "Size with its unit, a GPU profile or unlimited (default: the scenario's)");
    command->add_option("--set", options.set, "Knob values, e.g. batch=24,dtype=bf16; repeatable")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    command->add_option("--alloc-conf", options.alloc_conf, "Allocator settings over OOMLAB_ALLOC_CONF");
    command->add_option("--steps", options.steps,
                        "Steps per run (default: the scenario's at the scale); more steps see slower growth");
    command->add_option("--out", options.out_path, "Write the answer's run record (JSON)");
    command->add_flag("--json", options.json, "The answer as JSON, for tools");
  };
  oomlab::cli::BisectOptions bisect_options;
  auto* bisect = app.add_subcommand(
      "bisect", "The smallest budget a variant runs in (to 1 MiB), or with --knob the largest "
                "batch/seq/... that fits the budget; searched on dry in well under a second. Exit 0 "
                "with an answer, 1 when nothing fits or the confirmation fails, 2 on bad input");
  add_question_options(bisect, bisect_options);
  bisect->add_option("--knob", bisect_options.knob,
                     "Search this whole-number knob (batch, seq, micro_batches, ...) instead of the budget");
  oomlab::cli::AdviseCliOptions advise_options;
  auto* advise = app.add_subcommand(
      "advise", "Walk the decision tree on a failing run: each remedy (allocator settings, the "
                "scenario's fixes, bf16, fused attention, checkpointing, accumulation, offload, a "
                "smaller batch) run on dry; prints each one's need, fit and cost and the cheapest "
                "fix that fits. Exit 0 with a fix, 1 when none fits, 2 on bad input");
  add_question_options(advise, advise_options);
  advise->add_flag("--confirm", advise_options.confirm,
                   "Run each fitting candidate on the GPU and rank them by measured throughput");
  advise->add_option("--results", advise_options.results_dir,
                     "Committed run records to take costs from (default: results/<this GPU> if present)");
  // --- end bisect and advise ---

  // --- doctor ---
  oomlab::cli::DoctorOptions doctor_options;
  auto* doctor = app.add_subcommand(
      "doctor", "Check this machine for what makes runs fail: driver/runtime/toolkit, the GPU's "
                "architecture vs this build, memory, other processes holding the GPU, context "
                "size, MIG/ECC/persistence, allocator settings. Exit 0 if no check fails "
                "(warnings allowed), 1 if one fails, 2 on bad usage");
  doctor->add_flag("--json", doctor_options.json, "The same fields as JSON, for tools");
  // --- end doctor ---

  // --- compare and report ---
  oomlab::cli::CompareOptions compare_options;
  auto* compare = app.add_subcommand(
      "compare", "Compare two result sets (run records, suite folders, baselines or Google Benchmark "
                 "JSON; across commits or GPUs): outcome, peaks and throughput per variant, each "
                 "benchmark counter. Exit 0 if nothing got worse beyond the threshold (and the "
                 "noise of the step times), 1 on a regression, 2 on bad input");
  compare->add_option("A", compare_options.a, "The reference: a file or folder")->required();
  compare->add_option("B", compare_options.b, "The one compared with it: a file or folder")->required();
  compare->add_option("--threshold", compare_options.threshold,
                      "Relative change below which a row is the same (default 2%)");
  compare->add_option("--metrics", compare_options.metrics,
                      "Comma-separated: outcome, peak, peak_allocated, peak_reserved, need, "
                      "peak_device_used, throughput, tags, replay (two replays' largest site, "
                      "iterations, leak, what-if fits), or benchmark counters (real_time, TFLOP/s, "
                      "...). Default: outcome, peak, throughput, replay and every counter");
  compare->add_flag("--json", compare_options.json, "The same fields as JSON, every row");
  compare->add_flag("--all", compare_options.all, "Also print the rows that are the same");
  oomlab::cli::ReportOptions report_options;
  auto* report = app.add_subcommand(
      "report", "Write a Markdown report of a result set with SVG charts: the memory timeline of each "
                "variant stacked by tag with the budget and the OOM, the segments at the peak, peaks and "
                "throughput across variants and GPUs. Exit 0, 2 on bad input");
  report->add_option("DIR", report_options.dir, "A folder of run records (a suite folder, results/h200)")->required();
  report->add_option("-o,--output", report_options.output, "The Markdown page (default DIR/report.md): a regular "
                     "or new file, not a device or a folder; the charts go in charts/ beside it");
  report->add_flag("--no-rerun", report_options.no_rerun,
                   "Use only the traces beside the records (<record>.trace.json, .oom.json); without "
                   "this a record with none is re-run on dry for its timeline");
  // --- end compare and report ---

  // --- replay ---
  oomlab::cli::ReplayCliOptions replay_options;
  auto* replay = app.add_subcommand(
      "replay", "Replay a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) through oomlab's "
                "caching allocator on dry: the same segment decisions as PyTorch (or the first that "
                "differs), its OOM diagnosed with the Python frames, the allocation sites at the peak; "
                "with --what-if each remedy tried on the same requests. Exit 0 when it reproduces "
                "PyTorch, 1 when it diverges, 2 on bad input");
  replay->add_option("SNAPSHOT", replay_options.snapshot, "The snapshot file (.pickle, or .pickle.gz)")->required();
  replay->add_option("--budget", replay_options.budget,
                     "The cap the run had: a size with its unit or a GPU profile (default: the tightest "
                     "cap consistent with the trace)");
  replay->add_option("--alloc-conf", replay_options.alloc_conf,
                     "Allocator settings over the snapshot's own (PYTORCH_CUDA_ALLOC_CONF syntax)");
  replay->add_option("--device", replay_options.device, "The traced device to replay (default: the one that ran out of memory)")
      ->check([](const std::string& text) {
        // Checked as text: CLI11 would read "" and "-1" as the default and say nothing.
        const bool index = !text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
        return index ? std::string() : "not a device index: '" + text + "' (0, 1, ...: a device the snapshot traced)";
      });
  replay->add_option("--out", replay_options.out_path, "Write the replay's run record (JSON)");
  replay->add_option("--trace", replay_options.trace_path, "Write oomlab's allocator trace of the replay (Chrome/Perfetto JSON)");
  replay->add_flag("--what-if", replay_options.what_if,
                   "Also replay under expandable segments, max_split_size_mb values, "
                   "roundup_power2_divisions, empty_cache() at phase boundaries and the next smaller card");
  replay->add_option("--from", replay_options.from,
                     "Report from here on: entry:N (the trace's entry N) or a time since its first entry (12.5s, "
                     "300ms, 1500us); what comes before is still replayed");
  replay->add_option("--to", replay_options.to, "Report up to here (not included): entry:N or a time, as --from");
  replay->add_flag("--json", replay_options.json, "The same fields as JSON, for tools");
  // --- end replay ---

  // --- extrapolate ---
  oomlab::cli::ExtrapolateCliOptions extrapolate_options;
  auto* extrapolate = app.add_subcommand(
      "extrapolate", "Predict a PyTorch program's allocator peak at a batch (or sequence length) it never ran, from "
                     "snapshots at two or three small ones: requests aligned by action and stack, each size fitted "
                     "exactly, the trace at --at replayed as `replay` does; --bisect the largest value that fits "
                     "--budget. Exit 0 with an answer, 1 when nothing fits, 2 on bad input or recordings that differ");
  extrapolate->add_option("SNAPSHOTS", extrapolate_options.snapshots, "Two or more snapshots, one per --knob value")
      ->required();
  extrapolate->add_option("--knob", extrapolate_options.knob, "The knob and its value in each snapshot: batch=1,2,4")
      ->required();
  extrapolate->add_option("--at", extrapolate_options.at, "The value to predict at (e.g. 32)");
  extrapolate->add_flag("--bisect", extrapolate_options.bisect, "The largest value whose replay fits --budget");
  extrapolate->add_option("--fit", extrapolate_options.fit,
                          "auto (affine; quadratic where a line fails and three snapshots allow), affine, quadratic");
  extrapolate->add_option("--budget", extrapolate_options.budget,
                          "A size with its unit or a GPU profile (rtx3060-12g); default unlimited");
  extrapolate->add_option("--alloc-conf", extrapolate_options.alloc_conf,
                          "Allocator settings over the snapshots' own (PYTORCH_CUDA_ALLOC_CONF syntax)");
  extrapolate->add_option("--device", extrapolate_options.device, "The traced device (default: the busiest)");
  extrapolate->add_option("--out", extrapolate_options.out_path, "Write the prediction's run record (JSON, for compare)");
  extrapolate->add_flag("--what-if", extrapolate_options.what_if, "Also replay the prediction under each remedy");
  extrapolate->add_flag("--json", extrapolate_options.json, "The same fields as JSON, for tools");
  // --- end extrapolate ---

  // CLI11 would only say "A subcommand is required" for a misspelt command: name it.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* command : std::as_const(app).get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + command->get_name();
      known = known || command->get_name() == argv[1];
    }
    if (!known) return usage_error(std::string("unknown command '") + argv[1] + "'; valid: " + names);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    const CLI::App* command = argc > 1 && argv[1][0] != '-' ? app.get_subcommand(argv[1]) : nullptr;
    return usage_error(e.what() + (command ? option_suggestion(*command, argc, argv) : std::string()));
  }

  try {
    // These run variants in child processes, each needing a private temp folder for its record.
    if ((run->parsed() && !run_options.in_process) || suite->parsed() || bisect->parsed() || advise->parsed() ||
        (report->parsed() && !report_options.no_rerun)) {
      oomlab::cli::require_temp_directory();
    }
    if (list->parsed()) return oomlab::cli::list_command(list_options);
    if (run->parsed()) {
      run_options.steps_given = steps->count() > 0;
      if (budget->count() > 0 && run_options.budget.empty()) {
        throw oomlab::cli::UsageError(
            "--budget needs a value: a size with its unit (12GiB, 512MiB), a GPU profile "
            "(rtx4090, a100-40g; see `oomlab list`) or unlimited");
      }
      return oomlab::cli::run_command(run_options);
    }
    if (suite->parsed()) return oomlab::cli::suite_command(suite_options);
    if (doctor->parsed()) return oomlab::cli::doctor_command(doctor_options);
    if (bisect->parsed()) return oomlab::cli::bisect_command(bisect_options);
    if (advise->parsed()) return oomlab::cli::advise_command(advise_options);
    if (compare->parsed()) return oomlab::cli::compare_command(compare_options);  // compare and report
    if (report->parsed()) return oomlab::cli::report_command(report_options);  // compare and report
    if (replay->parsed()) return oomlab::cli::replay_command(replay_options);  // replay
    if (extrapolate->parsed()) return oomlab::cli::extrapolate_command(extrapolate_options);  // extrapolate
  } catch (const oomlab::cli::UsageError& e) {
    return usage_error(e.what());
  } catch (const oomlab::process::Interrupted& interrupted) {
    std::fprintf(stderr, "oomlab: %s\n", interrupted.describe().c_str());
    return interrupted.exit_code();
  } catch (const std::bad_alloc&) {
    // Host memory, not a GPU's (a run's OOM is its outcome, never thrown this far): an input too
    // large for this machine is the input's problem, exit 2 like any other.
    return usage_error("this machine ran out of host memory for the input; give a smaller one, or run where more "
                       "memory is free");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oomlab: error: %s\n", e.what());
    return 1;
  }
  return usage_error("no subcommand");
}
