// oomlab: list | run | suite. Bad input is one "oomlab: error: ..." line and exit code 2.
#include <cstdio>
#include <exception>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

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

  auto* list = app.add_subcommand("list", "List scenarios, variants, budgets and expected outcomes");

  oomlab::cli::RunOptions run_options;
  auto* run = app.add_subcommand(
      "run", "Run a scenario's variants, each in a child process; exit 0 iff every outcome "
             "matches its expectation (1 otherwise, 2 on bad input)");
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
  run->add_option("--alloc-conf", run_options.alloc_conf,
                  "Allocator settings over OOMLAB_ALLOC_CONF, e.g. max_split_size_mb:128");
  run->add_option("--timeout", run_options.timeout_seconds,
                  "Kill a variant still running after this many seconds (0: no limit)");
  run->add_flag("--profile", run_options.profile,
                "Time the scenario's ranges (attention, MLP, optimizer...) on the device; print "
                "them and keep them in the record as profile_ms.<range>");
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
    return usage_error(e.what());
  }

  try {
    if (list->parsed()) return oomlab::cli::list_command();
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
  } catch (const oomlab::cli::UsageError& e) {
    return usage_error(e.what());
  } catch (const oomlab::process::Interrupted& interrupted) {
    std::fprintf(stderr, "oomlab: %s\n", interrupted.describe().c_str());
    return interrupted.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oomlab: error: %s\n", e.what());
    return 1;
  }
  return usage_error("no subcommand");
}
