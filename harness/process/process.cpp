#include "harness/process/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>

#include "harness/process/lifetime.hpp"

#include "harness/process/worker.hpp"

extern char** environ;

namespace oomlab::process {
namespace {

std::system_error errno_error(const std::string& what) {
  return std::system_error(errno, std::generic_category(), what);
}

}  // namespace

std::string ExitStatus::describe() const {
  if (exited) return "exit code " + std::to_string(code);
  const char* name = sigabbrev_np(signal);
  return "killed by signal " + std::to_string(signal) +
         (name ? std::string(" (SIG") + name + ")" : std::string());
}

ExitStatus ExitStatus::from_wait_status(int status) {
  ExitStatus result;
  if (WIFSIGNALED(status)) {
    result.exited = false;
    result.signal = WTERMSIG(status);
  } else {
    result.code = WEXITSTATUS(status);
  }
  return result;
}

Child::~Child() {
  if (valid() && !status_) {
    // Still running: the parent is unwinding (an exception) or forgot it. Never leave orphans.
    ::kill(pid_, SIGKILL);
    wait();
  }
  close_report();
}

Child::Child(Child&& other) noexcept
    : pid_(other.pid_), report_fd_(other.report_fd_), status_(other.status_),
      report_(std::move(other.report_)) {
  other.pid_ = -1;
  other.report_fd_ = -1;
}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    Child old(std::move(*this));  // the old child is killed and reaped here
    pid_ = other.pid_;
    report_fd_ = other.report_fd_;
    status_ = other.status_;
    report_ = std::move(other.report_);
    other.pid_ = -1;
    other.report_fd_ = -1;
  }
  return *this;
}

ExitStatus Child::wait() {
  if (status_) return *status_;
  if (!valid()) throw std::logic_error("Child::wait on an empty Child");
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) throw errno_error("waitpid(" + std::to_string(pid_) + ")");
  }
  status_ = ExitStatus::from_wait_status(status);
  return *status_;
}

std::optional<ExitStatus> Child::try_wait() {
  if (status_ || !valid()) return status_;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r < 0 && errno != EINTR) throw errno_error("waitpid(" + std::to_string(pid_) + ")");
  if (r == pid_) status_ = ExitStatus::from_wait_status(status);
  return status_;
}

void Child::send_signal(int signal) {
  if (valid() && !status_) ::kill(pid_, signal);
}

std::string Child::report() {
  if (report_fd_ >= 0) {
    char buffer[4096];
    for (;;) {
      ssize_t n = ::read(report_fd_, buffer, sizeof buffer);
      if (n > 0) { report_.append(buffer, static_cast<std::size_t>(n)); continue; }
      if (n < 0 && errno == EINTR) continue;
      break;  // EOF (the child closed its end by exiting) or an error
    }
    close_report();
  }
  return report_;
}

void Child::close_report() {
  if (report_fd_ >= 0) ::close(report_fd_);
  report_fd_ = -1;
}

std::string self_exe_path() {
  char path[4096];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw errno_error("readlink(/proc/self/exe)");
  return std::string(path, static_cast<std::size_t>(n));
}

Child spawn(const std::string& path, const std::vector<std::string>& args,
            const std::vector<std::string>& environment) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  // The environment plus this process's pid, so the child can tie its life to ours.
  const std::string parent_prefix = std::string(kParentPidVariable) + "=";
  const std::string parent_entry = parent_prefix + std::to_string(::getpid());
  const auto set_here = [&](const char* entry) {  // replaced by `environment` or ours
    const char* equals = std::strchr(entry, '=');
    const std::size_t name = equals ? static_cast<std::size_t>(equals - entry) + 1 : std::strlen(entry);
    if (std::strncmp(entry, parent_prefix.c_str(), parent_prefix.size()) == 0) return true;
    for (const std::string& mine : environment) {
      if (mine.size() >= name && mine.compare(0, name, entry, name) == 0) return true;
    }
    return false;
  };
  std::vector<char*> envp;
  for (char** entry = environ; *entry; ++entry) {
    if (!set_here(*entry)) envp.push_back(*entry);
  }
  for (const std::string& mine : environment) envp.push_back(const_cast<char*>(mine.c_str()));
  envp.push_back(const_cast<char*>(parent_entry.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, path.c_str(), nullptr, nullptr, argv.data(), envp.data());
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "posix_spawn(" + path + ")");
  return Child(pid, -1);
}

Child spawn_worker(const std::string& worker, const std::vector<std::string>& args) {
  std::vector<std::string> full = {kWorkerFlag, worker};
  full.insert(full.end(), args.begin(), args.end());
  return spawn(self_exe_path(), full);
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

WaitResult wait_interruptibly(Child& child, double timeout_seconds, double grace_seconds) {
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  // A limit past what the clock can count (about 292 years in nanoseconds: --timeout 1e10) is no
  // limit; converting it would overflow into a deadline in the past and kill the child at once.
  const auto start = Clock::now();
  const double representable = std::chrono::duration<double>(Clock::time_point::max() - start).count();
  const bool limited = timeout_seconds > 0 && timeout_seconds < representable / 2;
  const auto deadline = limited ? start + seconds(timeout_seconds) : Clock::time_point::max();
  set_current_child(child.pid());
  struct Forget { ~Forget() { set_current_child(0); } } forget;
  for (;;) {
    if (auto status = child.try_wait()) return {*status, false};
    if (const int signal = pending_interrupt()) {
      child.send_signal(signal);
      const auto grace_end = Clock::now() + seconds(grace_seconds);
      while (!child.try_wait() && Clock::now() < grace_end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      child.send_signal(SIGKILL);  // a no-op once it ended
      child.wait();
      throw Interrupted{signal};
    }
    if (Clock::now() >= deadline) {
      child.send_signal(SIGKILL);
      return {child.wait(), true};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Child fork_call(const std::function<int(int report_fd)>& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw errno_error("pipe2");
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int saved = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    errno = saved;
    throw errno_error("fork");
  }
  if (pid == 0) {
    die_with_parent(parent);
    ::close(fds[0]);
    int code = 70;
    try {
      code = body(fds[1]);
    } catch (const std::exception& e) {
      write_all(fds[1], std::string("uncaught exception: ") + e.what());
    } catch (...) {
      write_all(fds[1], "uncaught non-standard exception");
    }
    ::close(fds[1]);
    // _exit: the copy of the parent's atexit handlers and static destructors must not run twice.
    ::_exit(code);
  }
  ::close(fds[1]);
  return Child(pid, fds[0]);
}

}  // namespace oomlab::process
