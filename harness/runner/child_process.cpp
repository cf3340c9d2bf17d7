// One variant per child process: the parent re-executes its own binary with the hidden
// `__child` subcommand and reads the record the child writes, so a crash, an abort or a hard
// OOM in one variant is an outcome and the other variants still run.
#include <sys/resource.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/process/process.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/runner.hpp"

namespace oomlab {

namespace {

// A private directory for the child's record, removed with everything in it when done.
class TempDirectory {
 public:
  TempDirectory() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/oomlab-child-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (!::mkdtemp(buffer.data())) {
      throw std::runtime_error("cannot create a temp directory " + pattern + ": " +
                               std::strerror(errno));
    }
    path_ = buffer.data();
  }
  ~TempDirectory() {
    ::unlink((path_ + "/record.json").c_str());
    ::rmdir(path_.c_str());
  }
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<std::string> child_arguments(const RunRequest& request, const std::string& record_path) {
  return {kChildCommand,
          "--scenario", request.scenario,
          "--variant", request.variant,
          "--device", device_kind_name(request.device),
          "--scale", scale_name(request.scale),
          "--budget", request.budget,
          "--steps", std::to_string(request.steps),
          "--alloc-conf", request.alloc_conf,
          "--trace", request.trace_path,
          "--progress", request.progress ? "1" : "0",
          "--profile", request.profile ? "1" : "0",
          "--record-out", record_path};
}

// Waits for the child; past the request's time limit it is killed (SIGKILL) and reaped.
// Returns how it ended and whether the limit ended it.
std::pair<process::ExitStatus, bool> wait_with_limit(process::Child& child, double timeout_seconds) {
  if (timeout_seconds <= 0) return {child.wait(), false};
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto status = child.try_wait()) return {*status, false};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (auto status = child.try_wait()) return {*status, false};
  child.send_signal(SIGKILL);
  return {child.wait(), true};
}

}  // namespace

RunRecord run_variant_in_child(const RunRequest& request, const std::string& executable) {
  RunRecord failed = make_base_record(request);
  try {
    TempDirectory directory;
    const std::string record_path = directory.path() + "/record.json";
    std::fflush(stdout);
    std::fflush(stderr);
    process::Child child = process::spawn(executable, child_arguments(request, record_path));
    const auto [status, timed_out] = wait_with_limit(child, request.timeout_seconds);

    std::string record_error;
    bool have_record = false;
    RunRecord record;
    try {
      record = run_record_from_text(read_text_file(record_path));
      have_record = true;
    } catch (const std::exception& e) {
      record_error = e.what();
    }

    if (!status.exited) {
      RunRecord crashed = have_record ? record : failed;
      std::string message = "child process " + status.describe();
      if (timed_out) {
        message = "child process killed after the time limit of " +
                  std::to_string(request.timeout_seconds) + " s (" + status.describe() + ")";
      }
      crashed.outcome = Outcome{OutcomeStatus::crash, "", -1, message, status.signal};
      crashed.matches_expectation = false;
      return crashed;
    }
    const int exit_code = status.code;
    if (have_record && exit_code == 0) return record;
    failed.outcome = Outcome{OutcomeStatus::error, "", -1,
                             "child process exited with code " + std::to_string(exit_code) +
                                 (have_record ? "" : " without a record (" + record_error + ")"),
                             0};
  } catch (const std::exception& e) {
    failed.outcome = Outcome{OutcomeStatus::error, "", -1, e.what(), 0};
  }
  failed.matches_expectation = false;
  return failed;
}

int child_main(int argc, char** argv) {
  // A crashing variant is an expected outcome here: no core file for it.
  struct rlimit no_core {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  RunRequest request;
  std::string record_path;
  try {
    if (argc < 2 || std::string(argv[1]) != kChildCommand) {
      throw std::invalid_argument(std::string("expected the ") + kChildCommand + " subcommand");
    }
    if ((argc - 2) % 2 != 0) throw std::invalid_argument("arguments must come in pairs");
    for (int i = 2; i < argc; i += 2) {
      const std::string key = argv[i], value = argv[i + 1];
      if (key == "--scenario") {
        request.scenario = value;
      } else if (key == "--variant") {
        request.variant = value;
      } else if (key == "--device") {
        auto kind = parse_device_kind(value);
        if (!kind) throw std::invalid_argument("bad --device " + value);
        request.device = *kind;
      } else if (key == "--scale") {
        auto scale = parse_scale(value);
        if (!scale) throw std::invalid_argument("bad --scale " + value);
        request.scale = *scale;
      } else if (key == "--budget") {
        request.budget = value;
      } else if (key == "--steps") {
        request.steps = std::stoi(value);
      } else if (key == "--alloc-conf") {
        request.alloc_conf = value;
      } else if (key == "--trace") {
        request.trace_path = value;
      } else if (key == "--progress") {
        request.progress = value == "1";
      } else if (key == "--profile") {
        request.profile = value == "1";
      } else if (key == "--record-out") {
        record_path = value;
      } else {
        throw std::invalid_argument("unknown argument " + key);
      }
    }
    if (record_path.empty()) throw std::invalid_argument("--record-out is required");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oomlab: error: %s: %s\n", kChildCommand, e.what());
    return 2;
  }
  try {
    RunRecord record = run_variant_in_process(request);
    write_file_atomically(record_path, to_json(record).dump(2) + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oomlab: error: %s: %s\n", kChildCommand, e.what());
    return 3;
  }
  return 0;
}

}  // namespace oomlab
