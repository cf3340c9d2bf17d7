// Test helpers: run a weights7b variant at any budget (the story is told at several), and
// keep generated checkpoints in a per-test directory.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "harness/memory/budget.hpp"
#include "harness/memory/oom_error.hpp"
#include "harness/memory/tags.hpp"
#include "harness/runner/run_context.hpp"
#include "harness/runner/scenario.hpp"
#include "scenarios/models/safetensors/safetensors_writer.hpp"
#include "scenarios/models/safetensors/tests/temp_dir.hpp"
#include "scenarios/weights7b/checkpoint_cache.hpp"

namespace oomlab::scenarios::testing {

struct BudgetRun {
  std::optional<memory::OomInfo> oom;
  memory::MemoryStats stats;
  std::map<std::string, double> metrics;
  std::vector<memory::TraceEvent> events;
};

// `set` overrides the variant's knobs as --set does (check_knobs is not called: the tests of
// refusals call it themselves).
inline BudgetRun run_weights7b(const std::string& variant, DeviceKind kind, Scale scale,
                               const std::string& budget, const KnobSettings& set = {}) {
  const Scenario* scenario = ScenarioRegistry::instance().find("weights7b");
  if (!scenario) throw std::logic_error("weights7b is not registered");
  memory::AllocatorConfig config;
  config.budget = memory::parse_budget(budget).bytes;
  Device device(kind, config);
  BudgetRun run;
  {
    RunContext context(
        device, scale, scenario->default_steps(scale),
        resolve_knobs(scenario->name(), scenario->knobs(), scenario->variant_knobs(variant, scale), set));
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

// The run ran out of memory for lack of room (capacity) while allocating weights.
inline ::testing::AssertionResult oom_on_weights(const BudgetRun& run) {
  if (!run.oom) return ::testing::AssertionFailure() << "no OOM";
  if (run.oom->diagnosis != memory::Diagnosis::capacity || run.oom->tag != memory::Tag::weights) {
    return ::testing::AssertionFailure() << "OOM diagnosed " << memory::diagnosis_name(run.oom->diagnosis)
                                         << " on " << memory::tag_name(run.oom->tag);
  }
  return ::testing::AssertionSuccess();
}

// The three loads of one checkpoint: broken (the whole f32 file, at `broken_budget`, where it
// completes), fixed (streamed) and fixed-bf16-file (from a bf16 file), both at `budget`. They
// must load the same bf16 bits; the runs are returned for more checks.
struct ThreeLoads {
  BudgetRun broken, fixed, from_bf16;
};
inline ThreeLoads expect_three_loads_agree(DeviceKind kind, Scale scale, const std::string& broken_budget,
                                           const std::string& budget) {
  ThreeLoads runs{run_weights7b("broken", kind, scale, broken_budget), run_weights7b("fixed", kind, scale, budget),
                  run_weights7b("fixed-bf16-file", kind, scale, budget)};
  if (runs.broken.oom || runs.fixed.oom || runs.from_bf16.oom) {
    ADD_FAILURE() << "a load ran out of memory";
    return runs;
  }
  EXPECT_EQ(runs.broken.metrics.at("weights_digest52"), runs.fixed.metrics.at("weights_digest52"));
  EXPECT_EQ(runs.from_bf16.metrics.at("weights_digest52"), runs.fixed.metrics.at("weights_digest52"));
  return runs;
}

// check_knobs' message for `variant` at `scale` with `set` over its values (the checks before a
// run, a named checkpoint's among them), or "(accepted)".
inline std::string knob_error(const std::string& variant, Scale scale, const KnobSettings& set = {}) {
  const Scenario* scenario = ScenarioRegistry::instance().find("weights7b");
  if (!scenario) throw std::logic_error("weights7b is not registered");
  try {
    scenario->check_knobs(
        variant, scale,
        resolve_knobs(scenario->name(), scenario->knobs(), scenario->variant_knobs(variant, scale), set));
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "(accepted)";
}

// Bad input is one short line that names what is wrong.
inline void expect_one_line_naming(const std::string& message, const std::vector<std::string>& parts) {
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_LT(message.size(), 400u) << message;
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
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

// Names `path` as the user's checkpoint of `dtype` (OOMLAB_WEIGHTS7B_F32 / _BF16 / _F16) for the
// test's lifetime.
class GivenCheckpoint {
 public:
  GivenCheckpoint(DType dtype, const std::string& path)
      : variable_(weights7b::given_checkpoint_variable(dtype)) {
    ::setenv(variable_, path.c_str(), 1);
  }
  ~GivenCheckpoint() { ::unsetenv(variable_); }
  GivenCheckpoint(const GivenCheckpoint&) = delete;
  GivenCheckpoint& operator=(const GivenCheckpoint&) = delete;

 private:
  const char* variable_;
};

// A checkpoint of `tensors` (offsets assigned here) whose data bytes are all zero.
inline void write_zero_checkpoint(const std::string& path, const std::vector<safetensors::TensorEntry>& tensors) {
  safetensors::write_safetensors(path, tensors, {},
                                 [](const safetensors::TensorEntry&, std::uint64_t, std::uint8_t* dst,
                                    std::size_t bytes) { std::fill(dst, dst + bytes, 0); });
}

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
