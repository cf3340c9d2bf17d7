#include "harness/process/worker.hpp"

#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <stdexcept>

#include "harness/process/lifetime.hpp"

namespace oomlab::process {
namespace {

std::map<std::string, WorkerMain>& registry() {
  static std::map<std::string, WorkerMain> workers;  // function-local: safe in static init
  return workers;
}

}  // namespace

void register_worker(const std::string& name, WorkerMain main) {
  if (name.empty()) throw std::invalid_argument("register_worker: empty worker name");
  if (!registry().emplace(name, std::move(main)).second) {
    throw std::invalid_argument("register_worker: worker '" + name + "' registered twice");
  }
}

bool has_worker(const std::string& name) { return registry().count(name) != 0; }

bool run_worker_if_requested(int argc, char** argv, int& exit_code) {
  if (argc < 2 || std::strcmp(argv[1], kWorkerFlag) != 0) return false;
  die_with_parent_from_environment();
  if (argc < 3) {
    std::fprintf(stderr, "oomlab: %s needs a worker name\n", kWorkerFlag);
    exit_code = 2;
    return true;
  }
  const std::string name = argv[2];
  auto found = registry().find(name);
  if (found == registry().end()) {
    std::string known;
    for (const auto& entry : registry()) known += (known.empty() ? "" : ", ") + entry.first;
    std::fprintf(stderr, "oomlab: unknown worker '%s' (registered: %s)\n", name.c_str(),
                 known.empty() ? "none" : known.c_str());
    exit_code = 2;
    return true;
  }
  std::vector<std::string> args(argv + 3, argv + argc);
  try {
    exit_code = found->second(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oomlab worker %s: %s\n", name.c_str(), e.what());
    exit_code = 70;
  }
  return true;
}

}  // namespace oomlab::process
