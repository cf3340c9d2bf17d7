// The scenario interface. A scenario registers itself (OOMLAB_REGISTER_SCENARIO), so the runner
// and the CLI link scenarios without including them.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/memory/alloc_config.hpp"
#include "harness/runner/knobs.hpp"

namespace oomlab {

enum class Scale { tiny, small, full };
const char* scale_name(Scale scale);
std::optional<Scale> parse_scale(std::string_view name);

// How the story says a variant ends: fixed variants fit (ok), broken ones run out of memory
// (oom) or fail with a clear error (error, e.g. a forked child's CUDA call). Named like the
// record's outcome status, so a record matches when the two names are equal.
enum class Expect { ok, oom, error };
const char* expect_name(Expect expect);

struct VariantSpec {
  std::string name;         // "broken", "fixed-max-split"
  std::string description;  // one line: what this variant does differently
  Expect expected = Expect::ok;
  // It trades the results for memory (a prompt cut short): the same input gets another answer.
  // advise offers it but takes it only when no fix that keeps the answers fits.
  bool changes_answers = false;
};

class RunContext;

// A variant this device cannot run with these knobs (Scenario::check_device).
struct NotOnThisDevice : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

class Scenario {
 public:
  virtual ~Scenario() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;  // one line for `oomlab list`
  virtual std::vector<VariantSpec> variants() const = 0;
  // The budget (size or GPU profile) at which the story is told at this scale.
  virtual std::string budget(Scale scale) const = 0;
  // Default number of steps at this scale.
  virtual int default_steps(Scale scale) const = 0;
  // The knobs a user may set (`--set name=value`), and each variant's values at a scale: a
  // variant is a named set of knob values. Every declared knob has a value in every variant.
  virtual std::vector<KnobSpec> knobs() const { return {}; }
  virtual std::map<std::string, std::string> variant_knobs(const std::string& variant, Scale scale) const {
    (void)variant; (void)scale;
    return {};
  }
  // Combinations of knob values with no meaning (a batch that micro_batches does not divide):
  // throws std::invalid_argument with one line, checked before any run.
  virtual void check_knobs(const std::string& variant, Scale scale, const KnobValues& knobs) const {
    (void)variant; (void)scale; (void)knobs;
  }
  // Allocator settings this variant needs (e.g. max_split_size); called before the device exists.
  virtual void configure(const std::string& variant, Scale scale,
                         memory::AllocatorConfig& config) const {
    (void)variant; (void)scale; (void)config;
  }
  // Inputs from outside the program that this variant reads (a checkpoint the user named, say),
  // checked in the parent before any run: throws std::invalid_argument with one line naming the
  // bad input, so a malformed file is bad input (exit 2), not an outcome of the run.
  virtual void check_inputs(const std::string& variant, Scale scale, DeviceKind device) const {
    (void)variant; (void)scale; (void)device;
  }
  // What a device cannot run with these knobs (train7b sharded over 2 GPUs in one CUDA process):
  // throws NotOnThisDevice with one line. A run refuses (exit 2); a suite skips it and says why.
  virtual void check_device(const std::string& variant, Scale scale, DeviceKind device,
                            const KnobValues& knobs) const {
    (void)variant; (void)scale; (void)device; (void)knobs;
  }
  // Runs the variant. An OomError escaping here is the `oom` outcome.
  virtual void run(const std::string& variant, RunContext& context) const = 0;

 protected:
  // For run(): the run's knob values: the context's (the runner's, --set applied), or the
  // variant's own when the context has none (a scenario run directly, as tests do).
  KnobValues knobs_of(const std::string& variant, const RunContext& context) const;
};

// Values per scale, as a scenario declares them.
template <class T>
struct PerScale {
  T tiny, small, full;
  const T& at(Scale scale) const { return scale == Scale::tiny ? tiny : scale == Scale::small ? small : full; }
};

// A scenario declared as data, as nvbench declares a benchmark and its axes: what `oomlab list`,
// the suite, bisect and advise read without running it. Knobs, hooks and the run stay code.
struct ScenarioSpec {
  std::string name;
  std::string summary;  // one line for `oomlab list`
  std::vector<VariantSpec> variants;
  PerScale<std::string> budget;  // the size or GPU profile at which the story is told
  PerScale<int> steps;           // the default number of steps
};

// The Scenario whose name, summary, variants, budgets and steps are its spec's.
class DeclaredScenario : public Scenario {
 public:
  explicit DeclaredScenario(ScenarioSpec spec) : spec_(std::move(spec)) {}
  std::string name() const final { return spec_.name; }
  std::string summary() const final { return spec_.summary; }
  std::vector<VariantSpec> variants() const final { return spec_.variants; }
  std::string budget(Scale scale) const final { return spec_.budget.at(scale); }
  int default_steps(Scale scale) const final { return spec_.steps.at(scale); }

 private:
  ScenarioSpec spec_;
};

class ScenarioRegistry {
 public:
  static ScenarioRegistry& instance();
  void add(std::unique_ptr<Scenario> scenario);
  const Scenario* find(std::string_view name) const;
  std::vector<const Scenario*> all() const;  // sorted by name

 private:
  std::vector<std::unique_ptr<Scenario>> scenarios_;
};

template <class T>
struct ScenarioRegistrar {
  ScenarioRegistrar() { ScenarioRegistry::instance().add(std::make_unique<T>()); }
};

#define OOMLAB_CONCAT_INNER(a, b) a##b
#define OOMLAB_CONCAT(a, b) OOMLAB_CONCAT_INNER(a, b)
#define OOMLAB_REGISTER_SCENARIO(Type) \
  static ::oomlab::ScenarioRegistrar<Type> OOMLAB_CONCAT(oomlab_registrar_, __LINE__)

}  // namespace oomlab
