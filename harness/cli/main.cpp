// oomlab: list | run | suite | bisect | advise | doctor | compare | report | replay | extrapolate. Bad input is one
// "oomlab: error: ..." line and exit code 2.
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

  // In this order in `oomlab --help` and in the unknown-command message.
  const std::vector<oomlab::cli::Command> commands = {
      oomlab::cli::add_list_command(app),    oomlab::cli::add_run_command(app),
      oomlab::cli::add_suite_command(app),   oomlab::cli::add_bisect_command(app),
      oomlab::cli::add_advise_command(app),  oomlab::cli::add_doctor_command(app),
      oomlab::cli::add_compare_command(app), oomlab::cli::add_report_command(app),
      oomlab::cli::add_replay_command(app),  oomlab::cli::add_extrapolate_command(app)};

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
    for (const oomlab::cli::Command& command : commands) {
      if (!command.subcommand->parsed()) continue;
      if (command.runs_children()) oomlab::cli::require_temp_directory();
      return command.run();
    }
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
