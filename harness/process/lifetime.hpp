// A child never outlives its parent, and a parent stopped by SIGINT/SIGTERM stops its child
// first. On a GPU an orphaned child keeps its CUDA context and memory: the "zombie process
// holding the GPU" that a user then has to find with nvidia-smi.
//
//  - spawn() tells each child its parent's pid (kParentPidVariable); the child calls
//    die_with_parent_from_environment() first thing (run_worker_if_requested and child_main do),
//    which asks the kernel for SIGKILL when the parent dies (PR_SET_PDEATHSIG) and exits at
//    once if the parent is already gone. fork_call children do the same right after fork().
//  - A parent that runs children holds an InterruptGuard: SIGINT/SIGTERM only set a flag, which
//    the waiting loop reads (pending_interrupt), forwards to the child, waits for it, cleans up
//    and throws Interrupted; main() turns that into exit code 128 + signal (130, 143). A second
//    signal kills the current child (SIGKILL) and exits at once.
#pragma once
#include <sys/types.h>

#include <string>

namespace oomlab::process {

constexpr const char* kParentPidVariable = "OOMLAB_PARENT_PID";

// SIGKILL this process when `parent` dies; exits (code 70) now when `parent` is no longer its
// parent (it died before the request was made).
void die_with_parent(pid_t parent);
// die_with_parent(OOMLAB_PARENT_PID) when that variable is set (this is a spawned child).
void die_with_parent_from_environment();

// Thrown (not a std::exception, so no catch-all of a run turns it into an outcome) when the
// user stopped the program; main() exits with exit_code().
struct Interrupted {
  int signal = 0;
  int exit_code() const { return 128 + signal; }
  std::string describe() const;  // "interrupted by SIGINT"
};

// While alive, SIGINT and SIGTERM are recorded instead of ending the program. Not nestable.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

// The signal that arrived under the guard, or 0.
int pending_interrupt();
// Throws Interrupted when a signal is pending.
void throw_if_interrupted();
// The child a second signal kills at once (0: none). Set by whoever waits on a child.
void set_current_child(pid_t pid);

}  // namespace oomlab::process
