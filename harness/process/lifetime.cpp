#include "harness/process/lifetime.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace oomlab::process {
namespace {

volatile sig_atomic_t g_pending_signal = 0;
volatile sig_atomic_t g_current_child = 0;
struct sigaction g_previous_int {};
struct sigaction g_previous_term {};

void on_stop_signal(int signal) {
  if (g_pending_signal != 0) {
    // The second request: the user does not want to wait for a clean stop.
    if (g_current_child > 0) ::kill(static_cast<pid_t>(g_current_child), SIGKILL);
    ::_exit(128 + signal);
  }
  g_pending_signal = signal;
}

}  // namespace

void die_with_parent(pid_t parent) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
    std::fprintf(stderr, "oomlab: warning: cannot tie this process to its parent: %s\n",
                 std::strerror(errno));
  }
  // The parent may have died before the request: then this process was re-parented already.
  if (::getppid() != parent) ::_exit(70);
}

void die_with_parent_from_environment() {
  const char* text = std::getenv(kParentPidVariable);
  if (!text || !*text) return;
  char* end = nullptr;
  const long parent = std::strtol(text, &end, 10);
  if (*end != '\0' || parent <= 1) return;  // not set by spawn(): nothing to tie to
  die_with_parent(static_cast<pid_t>(parent));
}

std::string Interrupted::describe() const {
  const char* name = sigabbrev_np(signal);
  return std::string("interrupted by ") + (name ? std::string("SIG") + name : "signal " + std::to_string(signal));
}

InterruptGuard::InterruptGuard() {
  g_pending_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocking wait returns EINTR and looks at the flag
  ::sigaction(SIGINT, &action, &g_previous_int);
  ::sigaction(SIGTERM, &action, &g_previous_term);
}

InterruptGuard::~InterruptGuard() {
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
  g_current_child = 0;
  g_pending_signal = 0;  // outside a guard nothing is pending: the signal was acted on or too late
}

int pending_interrupt() { return g_pending_signal; }

void throw_if_interrupted() {
  if (const int signal = pending_interrupt()) throw Interrupted{signal};
}

void set_current_child(pid_t pid) { g_current_child = pid; }

}  // namespace oomlab::process
