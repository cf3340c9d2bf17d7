// One variant per child process: the parent re-executes its own binary with the hidden
// `__child` subcommand and reads the record the child writes, so a crash, an abort or a hard
// OOM in one variant is an outcome and the other variants still run.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/process/lifetime.hpp"
#include "harness/process/process.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/runner.hpp"
#include "harness/runner/temp_directory.hpp"
#include "harness/runner/json_text.hpp"

namespace oomlab {

namespace {

constexpr const char* kTempPrefix = "oomlab-child-";

std::vector<std::string> child_arguments(const RunRequest& request, const std::string& record_path) {
  return {kChildCommand,
          "--scenario", request.scenario,
          "--variant", request.variant,
          "--device", device_kind_name(request.device),
          "--scale", scale_name(request.scale),
          "--budget", request.budget,
          "--steps", std::to_string(request.steps),
          "--alloc-conf", request.alloc_conf,
          "--set", describe_knob_settings(request.set),
          "--trace", request.trace_path,
          "--oom-dump", request.oom_dump_path,
          "--progress", request.progress ? "1" : "0",
          "--profile", request.profile ? "1" : "0",
          "--quiet", request.quiet ? "1" : "0",
          "--shard-rank", std::to_string(request.shard.rank),
          "--shard-id", request.shard.nccl_id,
          "--record-out", record_path};
}

// A variant running in a child process, and the private folder its record goes to.
struct ChildRun {
  ChildRun(const RunRequest& request, const std::string& executable, const std::vector<std::string>& environment)
      : request(request) {
    std::fflush(stdout);
    std::fflush(stderr);
    child = process::spawn(executable, child_arguments(request, record_path()), environment);
  }
  std::string record_path() const { return directory.path() + "/record.json"; }

  const RunRequest request;
  TempDirectory directory{kTempPrefix};
  process::Child child;
};

// What the child that ended with `status` leaves: its record, or one saying how it failed.
RunRecord record_of(const ChildRun& run, process::ExitStatus status, bool timed_out) {
  const RunRequest& request = run.request;
  const std::string record_path = run.record_path();
  RunRecord failed = make_base_record(request);
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
  failed.matches_expectation = false;
  return failed;
}

class ChildRankProcess final : public RankProcess {
 public:
  ChildRankProcess(const RunRequest& request, const std::vector<std::string>& environment)
      : run_(request, process::self_exe_path(), environment) {}
  bool running() override { return !run_.child.try_wait().has_value(); }
  RunRecord finish() override { return record_of(run_, run_.child.wait(), false); }

 private:
  ChildRun run_;
};

// The GPU of `rank` as CUDA_VISIBLE_DEVICES names it: the rank-th of this process's list.
std::string visible_gpu_of(int rank) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!visible || !*visible) return std::to_string(rank);
  std::vector<std::string> gpus(1);
  for (const char* c = visible; *c; ++c) {
    if (*c == ',') gpus.emplace_back();
    else gpus.back() += *c;
  }
  if (rank >= static_cast<int>(gpus.size())) {
    throw std::invalid_argument("rank " + std::to_string(rank) + " has no GPU: CUDA_VISIBLE_DEVICES=" + visible +
                                " lists " + std::to_string(gpus.size()));
  }
  return gpus[static_cast<std::size_t>(rank)];
}

}  // namespace

RunRecord run_variant_in_child(const RunRequest& request, const std::string& executable) {
  try {
    ChildRun run(request, executable, {});
    const auto [status, timed_out] = process::wait_interruptibly(run.child, request.timeout_seconds);
    return record_of(run, status, timed_out);
  } catch (const std::exception& e) {
    RunRecord failed = make_base_record(request);
    failed.outcome = Outcome{OutcomeStatus::error, "", -1, e.what(), 0};
    failed.matches_expectation = false;
    return failed;
  }
}

std::unique_ptr<RankProcess> launch_rank_process(const RunRequest& request, int rank, const std::string& nccl_id) {
  RunRequest mine = request;
  mine.shard = {rank, nccl_id};
  mine.progress = false;
  mine.trace_path.clear();
  mine.oom_dump_path.clear();
  mine.quiet = true;  // rank 0 speaks for the run
  return std::make_unique<ChildRankProcess>(mine,
                                            std::vector<std::string>{"CUDA_VISIBLE_DEVICES=" + visible_gpu_of(rank)});
}

int child_main(int argc, char** argv) {
  process::die_with_parent_from_environment();
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
      } else if (key == "--set") {
        request.set = parse_knob_settings(value);
      } else if (key == "--trace") {
        request.trace_path = value;
      } else if (key == "--oom-dump") {
        request.oom_dump_path = value;
      } else if (key == "--progress") {
        request.progress = value == "1";
      } else if (key == "--profile") {
        request.profile = value == "1";
      } else if (key == "--quiet") {
        request.quiet = value == "1";
      } else if (key == "--shard-rank") {
        request.shard.rank = std::stoi(value);
      } else if (key == "--shard-id") {
        request.shard.nccl_id = value;
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
    write_file_atomically(record_path, json_text(to_json(record), 2) + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oomlab: error: %s: %s\n", kChildCommand, e.what());
    return 3;
  }
  return 0;
}

}  // namespace oomlab
