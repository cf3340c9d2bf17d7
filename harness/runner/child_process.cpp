// One variant per child process: the parent re-executes its own binary with the hidden
// `__child` subcommand and reads the record the child writes, so a crash, an abort or a hard
// OOM in one variant is an outcome and the other variants still run.
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/runner/atomic_file.hpp"
#include "harness/runner/runner.hpp"

namespace oomlab {

std::string signal_name(int signal) {
  static const std::map<int, const char*> names = {
      {SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
      {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},
      {SIGTRAP, "SIGTRAP"}, {SIGPIPE, "SIGPIPE"}, {SIGXFSZ, "SIGXFSZ"}, {SIGXCPU, "SIGXCPU"},
      {SIGSYS, "SIGSYS"},   {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}, {SIGALRM, "SIGALRM"},
      {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}};
  auto it = names.find(signal);
  return it != names.end() ? it->second : "signal " + std::to_string(signal);
}

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

std::vector<std::string> child_arguments(const RunRequest& request, const std::string& executable,
                                         const std::string& record_path) {
  return {executable,
          kChildCommand,
          "--scenario", request.scenario,
          "--variant", request.variant,
          "--device", device_kind_name(request.device),
          "--scale", scale_name(request.scale),
          "--budget", request.budget,
          "--steps", std::to_string(request.steps),
          "--alloc-conf", request.alloc_conf,
          "--trace", request.trace_path,
          "--progress", request.progress ? "1" : "0",
          "--record-out", record_path};
}

// Starts the child and returns its wait status.
int run_child(const std::vector<std::string>& arguments) {
  std::vector<char*> argv;
  for (const auto& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // A crashing variant is an expected outcome here: no core file for it.
    struct rlimit no_core {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::execv(argv[0], argv.data());
    std::fprintf(stderr, "oomlab: cannot execute %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  }
  return status;
}

}  // namespace

RunRecord run_variant_in_child(const RunRequest& request, const std::string& executable) {
  RunRecord failed = make_base_record(request);
  try {
    TempDirectory directory;
    const std::string record_path = directory.path() + "/record.json";
    int status = run_child(child_arguments(request, executable, record_path));

    std::string record_error;
    bool have_record = false;
    RunRecord record;
    try {
      record = run_record_from_text(read_text_file(record_path));
      have_record = true;
    } catch (const std::exception& e) {
      record_error = e.what();
    }

    if (WIFSIGNALED(status)) {
      int signal = WTERMSIG(status);
      RunRecord crashed = have_record ? record : failed;
      crashed.outcome = Outcome{OutcomeStatus::crash, "", -1,
                                "child process killed by signal " + std::to_string(signal) +
                                    " (" + signal_name(signal) + ")",
                                signal};
      crashed.matches_expectation = false;
      return crashed;
    }
    int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
