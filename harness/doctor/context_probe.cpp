// One CUDA context's device memory, measured the way a run's child pays it. cudaMemGetInfo needs
// a context, so no process can see its own "before"; instead a second process (a spawned worker:
// a fresh program, like a run's child) creates its context while ours is alive, and the free
// memory it sees is ours minus one context. Other processes allocating meanwhile would skew it.
#include <fcntl.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include <cerrno>
#include <string>
#include <vector>

#include "harness/doctor/cuda_facts.hpp"
#include "harness/process/process.hpp"
#include "harness/process/worker.hpp"

namespace oomlab::doctor::detail {
namespace {

constexpr const char* kContextWorker = "doctor.context";
constexpr double kWorkerTimeoutSeconds = 60;  // a first context can take seconds without persistence mode

// The worker: argv = DEVICE FD. Writes the free bytes it sees with its own context to FD.
int context_worker(const std::vector<std::string>& args) {
  if (args.size() != 2) return 2;
  const int device = std::stoi(args[0]), fd = std::stoi(args[1]);
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaError_t status = cudaSetDevice(device);
  if (status == cudaSuccess) status = cudaFree(nullptr);
  if (status == cudaSuccess) status = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (status != cudaSuccess) {
    process::write_all(fd, cudaGetErrorName(status));
    return 3;
  }
  return process::write_all(fd, std::to_string(free_bytes)) ? 0 : 1;
}

OOMLAB_REGISTER_WORKER(kContextWorker, context_worker);

// Everything the pipe holds; the writer has exited, so this ends at EOF without blocking long.
std::string read_to_end(int fd) {
  std::string text;
  char buffer[256];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return text;
    if (text.size() < 4096) text.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace

std::optional<std::size_t> measure_context_bytes(int device, std::size_t free_with_ours, std::string& error) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    error = "pipe2 failed";
    return std::nullopt;
  }
  ::fcntl(fds[1], F_SETFD, 0);  // the worker inherits the write end, and only that
  std::string report;
  try {
    process::Child child = process::spawn_worker(kContextWorker, {std::to_string(device), std::to_string(fds[1])});
    ::close(fds[1]);
    fds[1] = -1;
    process::WaitResult result = process::wait_interruptibly(child, kWorkerTimeoutSeconds);
    report = read_to_end(fds[0]);
    ::close(fds[0]);
    if (result.timed_out) {
      error = "the measuring process did not finish in 60 s";
      return std::nullopt;
    }
    if (!result.status.success()) {
      error = "the measuring process ended with " + result.status.describe() +
              (report.empty() ? "" : " (" + report.substr(0, 80) + ")");
      return std::nullopt;
    }
  } catch (const std::exception& e) {
    if (fds[1] >= 0) ::close(fds[1]);
    ::close(fds[0]);
    error = std::string("cannot start the measuring process: ") + e.what();
    return std::nullopt;
  }
  if (report.empty() || report.find_first_not_of("0123456789") != std::string::npos || report.size() > 19) {
    error = "the measuring process reported nothing usable";
    return std::nullopt;
  }
  const std::size_t free_with_both = std::stoull(report);
  if (free_with_both > free_with_ours) {
    error = "memory was freed by another process while measuring; run doctor again";
    return std::nullopt;
  }
  return free_with_ours - free_with_both;
}

}  // namespace oomlab::doctor::detail
