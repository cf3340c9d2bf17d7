// runner-test: registered only inside child_runner_test. Each variant ends one way: ok, oom,
// error (throws), crash (SIGSEGV, abort), an exit without a record, a hang, or a record with a
// NaN metric.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "harness/memory/tags.hpp"
#include "harness/runner/run_context.hpp"
#include "harness/runner/scenario.hpp"
#include "harness/runner/tests/runner_test_scenario.hpp"

namespace oomlab::runner_test {
namespace {

class RunnerTestScenario : public Scenario {
 public:
  std::string name() const override { return kRunnerTestScenario; }
  std::string summary() const override { return "runner test: one variant per outcome"; }
  std::vector<VariantSpec> variants() const override {
    return {{"ok", "allocates within budget", Expect::ok},
            {"oom", "asks for more than the budget", Expect::oom},
            {"throws", "throws a plain exception", Expect::ok},
            {"segv", "raises SIGSEGV", Expect::ok},
            {"abort", "calls abort()", Expect::ok},
            {"exit", "exits without writing a record", Expect::ok},
            {"hang", "never ends", Expect::ok},
            {"nan-metric", "finishes, with a metric that is not a number", Expect::ok}};
  }
  std::string budget(Scale) const override { return "64MiB"; }
  int default_steps(Scale) const override { return kRunnerTestSteps; }
  void configure(const std::string& variant, Scale, memory::AllocatorConfig& config) const override {
    if (variant == "ok") config.max_split_size = kVariantMaxSplit;
  }

  void run(const std::string& variant, RunContext& context) const override {
    auto& allocator = context.allocator();
    for (int step = 0; step < context.steps(); ++step) {
      context.begin_step(step);
      if (step == kOomStep) {
        if (variant == "oom") {
          memory::TagScope tag(memory::Tag::activations);
          allocator.allocate(2 * kRunnerTestBudget);  // capacity: cannot fit at all
        }
        if (variant == "throws") throw std::runtime_error("scenario failed on purpose");
        if (variant == "segv") ::raise(SIGSEGV);
        if (variant == "abort") std::abort();
        if (variant == "exit") ::_exit(7);
        while (variant == "hang") ::pause();
      }
      void* weights = nullptr;
      {
        memory::TagScope tag(memory::Tag::weights);
        weights = allocator.allocate(4 * MiB);
      }
      allocator.deallocate(weights);
      context.add_work(100, "items/s");
      context.end_step();
    }
    context.set_metric("finished_steps", context.steps());
    if (variant == "nan-metric") context.set_metric("per_element", 0.0 / 0.0);  // 0 elements
    if (!context.shard_role().nccl_id.empty()) {  // started as another rank: which, and on which GPU
      context.set_metric("shard_rank", context.shard_role().rank);
      const char* gpu = std::getenv("CUDA_VISIBLE_DEVICES");
      context.set_metric("visible_gpu", gpu ? std::atof(gpu) : -1);
    }
  }
};

OOMLAB_REGISTER_SCENARIO(RunnerTestScenario);

}  // namespace
}  // namespace oomlab::runner_test
