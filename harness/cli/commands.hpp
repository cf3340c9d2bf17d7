// The oomlab subcommands: main.cpp parses the command line and runs the one given.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace oomlab::cli {

// Bad input from the user: main prints "oomlab: error: <what>" and exits with 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Each command is a subcommand on the app with its options bound to values it keeps; main runs the
// one parsing chose. add_*_command (in <name>_command.cpp) declares the options and the run.
struct Command {
  CLI::App* subcommand = nullptr;
  // The command, with its options parsed: the process exit code; bad input throws UsageError.
  std::function<int()> run;
  // Whether this run starts variants in child processes, each needing a private temp folder for its
  // record (main checks for one before anything runs).
  std::function<bool()> runs_children = [] { return false; };
};
Command add_list_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_suite_command(CLI::App& app);
Command add_bisect_command(CLI::App& app);
Command add_advise_command(CLI::App& app);
Command add_doctor_command(CLI::App& app);
Command add_compare_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_replay_command(CLI::App& app);
Command add_extrapolate_command(CLI::App& app);

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
// The question's options on `command` (bisect, advise): the same settings as `run`, searched on dry.
void add_question_options(CLI::App& command, QuestionOptions& options);
// The options several commands share, each declared once: its name and how its value is taken; the
// command says in `description` what the value means to it.
// --set NAME=VALUE[,NAME=VALUE], repeatable (run and the questions).
void add_set_option(CLI::App& command, std::vector<std::string>& set, const std::string& description);
// --budget: a size with its unit, a GPU profile or unlimited.
CLI::Option* add_budget_option(CLI::App& command, std::string& budget, const std::string& description);
// --alloc-conf: allocator settings over those the run would have had.
void add_alloc_conf_option(CLI::App& command, std::string& alloc_conf, const std::string& description);
// --json: the command's answer as JSON, for tools, instead of its table.
void add_json_flag(CLI::App& command, bool& json,
                   const std::string& description = "The same fields as JSON, for tools");

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
