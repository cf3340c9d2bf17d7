// Worker dispatch: the C++ form of Python's `if __name__ == "__main__":`.
//
// A spawned worker is this same program started again with `--oomlab-worker NAME ARGS...`.
// main() must call run_worker_if_requested() FIRST, before anything can touch CUDA:
//
//   int main(int argc, char** argv) {
//     int exit_code = 0;
//     if (oomlab::process::run_worker_if_requested(argc, argv, exit_code)) return exit_code;
//     ... the parent's program: CLI parsing, devices, scenarios ...
//   }
//
// Workers register by name from the code that owns them (OOMLAB_REGISTER_WORKER), like scenarios.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace oomlab::process {

constexpr const char* kWorkerFlag = "--oomlab-worker";

// A worker's main: receives the arguments after its name and returns the exit code.
using WorkerMain = std::function<int(const std::vector<std::string>& args)>;

// Throws std::invalid_argument when the name is empty or already registered.
void register_worker(const std::string& name, WorkerMain main);
bool has_worker(const std::string& name);

// When argv is `PROGRAM --oomlab-worker NAME ARGS...`: runs worker NAME, sets exit_code (its
// return value; 70 with a message on stderr when it throws; 2 for an unknown or missing name)
// and returns true. Otherwise returns false and leaves exit_code alone.
bool run_worker_if_requested(int argc, char** argv, int& exit_code);

struct WorkerRegistrar {
  WorkerRegistrar(const char* name, WorkerMain main) { register_worker(name, std::move(main)); }
};

#define OOMLAB_WORKER_CONCAT_INNER(a, b) a##b
#define OOMLAB_WORKER_CONCAT(a, b) OOMLAB_WORKER_CONCAT_INNER(a, b)
#define OOMLAB_REGISTER_WORKER(name, fn) \
  static ::oomlab::process::WorkerRegistrar OOMLAB_WORKER_CONCAT(oomlab_worker_, __LINE__)(name, fn)

}  // namespace oomlab::process
