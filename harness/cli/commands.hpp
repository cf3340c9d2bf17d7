// The oomlab subcommands behind main.cpp's argument parsing.
#pragma once
#include <stdexcept>
#include <string>

namespace oomlab::cli {

// Bad input from the user: main prints "oomlab: error: <what>" and exits with 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
  bool in_process = false;  // debugging: no child process (a crash then ends oomlab)
  double timeout_seconds = 0;  // per variant; 0: no limit
  bool profile = false;        // time the profiled ranges and print them per variant
};

struct SuiteOptions {
  std::string device;  // empty: the default plan (see suite_command.cpp)
  std::string scale;   // empty: the plan's scale per device
  std::string out_dir = "results/latest";
  double timeout_seconds = 1800;  // per variant: a hung variant must not hold up the suite
};

// Each returns the process exit code; bad input throws UsageError.
int list_command();
int run_command(const RunOptions& options);
int suite_command(const SuiteOptions& options);

}  // namespace oomlab::cli

#include "harness/device/device.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab::cli {

// Option values to enums, or UsageError naming the option and the valid values. A cuda
// device without a usable GPU is a UsageError too.
DeviceKind device_option(const std::string& text);
Scale scale_option(const std::string& text);
// A --timeout value: finite and >= 0 (0: no limit), else UsageError.
double timeout_option(double seconds);
// UsageError unless a file can be written at `path` (checked before any variant runs).
void require_writable(const char* option, const std::string& path);

}  // namespace oomlab::cli
