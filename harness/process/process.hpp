// One small process abstraction: start a child (spawn-style re-execution of this program, or a
// plain fork), wait for it, and read how it ended (exit code or signal). POSIX only.
//
// Spawn semantics (Windows' only method, Python's multiprocessing "spawn"): the child is a fresh
// run of the same program, so it repeats the program's start-up; whatever that start-up does
// (a static object that initialises CUDA, a call before the worker check) every worker does too.
// Fork semantics: the child is a copy of the parent, CUDA state included, and CUDA refuses to
// work in it once the parent initialised CUDA.
#pragma once
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace oomlab::process {

// How a child ended: exited with a code, or was killed by a signal.
struct ExitStatus {
  bool exited = true;  // false: killed by `signal`
  int code = 0;        // exit code when exited
  int signal = 0;      // signal number when killed
  bool success() const { return exited && code == 0; }
  std::string describe() const;  // "exit code 3", "killed by signal 9 (SIGKILL)"
  static ExitStatus from_wait_status(int status);
};

// A running (or finished) child process. Move-only. The destructor kills a child that is still
// running (SIGKILL) and reaps it, so an exception in the parent leaves no orphans or zombies.
class Child {
 public:
  Child() = default;
  Child(pid_t pid, int report_fd) : pid_(pid), report_fd_(report_fd) {}
  ~Child();
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  bool valid() const { return pid_ > 0; }
  // Blocks until the child ends (retrying on EINTR); later calls return the same status.
  ExitStatus wait();
  // The status when the child has ended, else nullopt; never blocks.
  std::optional<ExitStatus> try_wait();
  // Sends `signal` to a child that is still running; does nothing after it was reaped.
  void send_signal(int signal);
  // What a fork_call child wrote to its report pipe (empty for spawned children). Reads until
  // the child closes the pipe, so call it after wait()/try_wait() said the child ended.
  std::string report();

 private:
  void close_report();
  pid_t pid_ = -1;
  int report_fd_ = -1;
  std::optional<ExitStatus> status_;
  std::string report_;
};

// The path of this program's executable (/proc/self/exe resolved).
std::string self_exe_path();

// Starts `path` with `args` (argv[0] is `path`), inheriting stdin/stdout/stderr and the
// environment plus kParentPidVariable (lifetime.hpp: the child dies with this process), with
// `environment` ("NAME=value") set over it. posix_spawn: safe in a multi-threaded parent that has
// initialised CUDA. Throws std::system_error when the program cannot be started.
Child spawn(const std::string& path, const std::vector<std::string>& args,
            const std::vector<std::string>& environment = {});

// Re-executes this program as the registered worker `worker` (see worker.hpp) with `args`.
Child spawn_worker(const std::string& worker, const std::vector<std::string>& args);

// How wait_interruptibly ended.
struct WaitResult {
  ExitStatus status;
  bool timed_out = false;  // the time limit ended it (SIGKILL)
};

// Waits for `child`; past `timeout_seconds` (<= 0: no limit) it is killed (SIGKILL) and reaped.
// A pending interrupt (lifetime.hpp) is forwarded to the child, which gets `grace_seconds` to
// end before SIGKILL; once it is reaped, throws Interrupted.
WaitResult wait_interruptibly(Child& child, double timeout_seconds, double grace_seconds = 5);

// fork(): the child (which dies with this process) runs `body(report_fd)` and exits with its return value (an exception
// in the body: its message goes to the report pipe and the exit code is 70). The parent reads the report with
// Child::report(). Keep reports short (a pipe buffer, 64 KiB) or read them first.
Child fork_call(const std::function<int(int report_fd)>& body);

// Writes all of `text` to `fd` (retrying on EINTR and short writes); false on error.
bool write_all(int fd, const std::string& text);

}  // namespace oomlab::process
