// Test helpers: run a weights7b variant at any budget (the story is told at several), and
// keep generated checkpoints in a per-test directory.
#pragma once
#include <cstdlib>
#include <optional>
#include <string>

#include "harness/memory/budget.hpp"
#include "harness/memory/oom_error.hpp"
#include "harness/runner/run_context.hpp"
#include "harness/runner/scenario.hpp"
#include "scenarios/models/safetensors/tests/temp_dir.hpp"

namespace oomlab::scenarios::testing {

struct BudgetRun {
  std::optional<memory::OomInfo> oom;
  memory::MemoryStats stats;
  std::map<std::string, double> metrics;
  std::vector<memory::TraceEvent> events;
};

inline BudgetRun run_weights7b(const std::string& variant, DeviceKind kind, Scale scale,
                               const std::string& budget) {
  const Scenario* scenario = ScenarioRegistry::instance().find("weights7b");
  if (!scenario) throw std::logic_error("weights7b is not registered");
  memory::AllocatorConfig config;
  config.budget = memory::parse_budget(budget).bytes;
  Device device(kind, config);
  BudgetRun run;
  {
    RunContext context(device, scale, scenario->default_steps(scale));
    try {
      scenario->run(variant, context);
    } catch (const memory::OomError& error) {
      run.oom = error.info();
    }
    run.metrics = context.metrics();
  }
  run.stats = device.allocator().stats();
  const auto& events = device.allocator().trace().events();
  run.events.assign(events.begin(), events.end());
  return run;
}

// Points the checkpoint cache at a fresh directory for the test's lifetime.
class CheckpointDir {
 public:
  CheckpointDir() { ::setenv("OOMLAB_WEIGHTS7B_DIR", dir_.path().c_str(), 1); }
  ~CheckpointDir() { ::unsetenv("OOMLAB_WEIGHTS7B_DIR"); }
  const safetensors::testing::TempDir& dir() const { return dir_; }

 private:
  safetensors::testing::TempDir dir_;
};

// The bytes the caching allocator's block for a fresh request of `bytes` holds, by its documented
// rules: requests round up to 512 B; one of >= 10 MiB gets its own segment rounded up to 2 MiB
// and keeps the remainder unless that is over 1 MiB (the large pool's split threshold).
inline std::size_t block_bytes(std::size_t bytes) {
  const std::size_t request = (bytes + 511) / 512 * 512;
  constexpr std::size_t MiB = std::size_t{1} << 20;
  if (request < 10 * MiB) return request;
  const std::size_t segment = (request + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
  return segment - request > MiB ? request : segment;
}

}  // namespace oomlab::scenarios::testing
