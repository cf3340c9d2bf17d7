// Resolving a run request and running a variant in this process.
#include "harness/runner/runner.hpp"

#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "harness/device/cuda_archs.hpp"
#include "harness/device/engine_report.hpp"
#include "harness/device/monitor.hpp"
#include "harness/device/op_profiler.hpp"
#include "harness/memory/oom_error.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/tags.hpp"
#include "harness/memory/trace_export.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/json_text.hpp"
#include "harness/runner/progress.hpp"
#include "harness/runner/run_context.hpp"

namespace oomlab {

namespace {

// How often the device monitor samples: fine enough for steps of tens of milliseconds.
constexpr std::chrono::milliseconds kMonitorInterval(10);

std::string join_names(const std::vector<std::string>& names) {
  std::string joined;
  for (const auto& name : names) joined += (joined.empty() ? "" : ", ") + name;
  return joined.empty() ? "(none registered)" : joined;
}

std::vector<std::string> variant_names(const Scenario& scenario) {
  std::vector<std::string> names;
  for (const auto& variant : scenario.variants()) names.push_back(variant.name);
  return names;
}

}  // namespace

std::vector<std::string> select_variants(const Scenario& scenario,
                                         const std::string& variant_or_all) {
  auto names = variant_names(scenario);
  if (variant_or_all == "all") return names;
  for (const auto& name : names) {
    if (name == variant_or_all) return {name};
  }
  throw std::invalid_argument("unknown variant '" + variant_or_all + "' of scenario '" +
                              scenario.name() + "'; valid: all, " + join_names(names));
}

ResolvedRun resolve_run(const RunRequest& request) {
  ResolvedRun resolved;
  resolved.scenario = ScenarioRegistry::instance().find(request.scenario);
  if (!resolved.scenario) {
    std::vector<std::string> names;
    for (const Scenario* scenario : ScenarioRegistry::instance().all()) {
      names.push_back(scenario->name());
    }
    throw std::invalid_argument("unknown scenario '" + request.scenario +
                                "'; valid: " + join_names(names));
  }
  const Scenario& scenario = *resolved.scenario;
  bool found = false;
  for (const auto& variant : scenario.variants()) {
    if (variant.name == request.variant) {
      resolved.variant = variant;
      found = true;
    }
  }
  if (!found) {
    throw std::invalid_argument("unknown variant '" + request.variant + "' of scenario '" +
                                scenario.name() + "'; valid: " +
                                join_names(variant_names(scenario)));
  }
  if (request.device == DeviceKind::cuda && !cuda_available()) {
    throw std::invalid_argument("--device cuda: no usable CUDA device (" +
                                cuda_unavailable_reason() + ")");
  }
  if (request.steps < 0) {
    throw std::invalid_argument("--steps must be positive, got " + std::to_string(request.steps));
  }
  resolved.steps = request.steps > 0 ? request.steps : scenario.default_steps(request.scale);
  resolved.budget = memory::parse_budget(request.budget.empty() ? scenario.budget(request.scale)
                                                                : request.budget);
  memory::AllocatorConfig config;
  scenario.configure(resolved.variant.name, request.scale, config);
  config = memory::alloc_conf_from_env(config);
  if (!request.alloc_conf.empty()) {
    config = memory::parse_alloc_conf(request.alloc_conf, config, "--alloc-conf");
  }
  scenario.check_inputs(resolved.variant.name, request.scale, request.device);
  config.budget = resolved.budget.bytes;
  resolved.knobs = resolve_knobs(scenario.name(), scenario.knobs(),
                                 scenario.variant_knobs(resolved.variant.name, request.scale), request.set);
  try {
    scenario.check_knobs(resolved.variant.name, request.scale, resolved.knobs);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(scenario.name() + ": " + e.what());
  }
  try {
    // A rank > 0 sees one GPU (its own); rank 0 checked the run for all of them.
    if (request.shard.nccl_id.empty()) {
      scenario.check_device(resolved.variant.name, request.scale, request.device, resolved.knobs);
    }
  } catch (const NotOnThisDevice& e) {
    throw NotOnThisDevice(scenario.name() + ": " + e.what());
  }
  resolved.config = config;
  return resolved;
}

RunRecord make_base_record(const RunRequest& request) {
  RunRecord record;
  record.scenario = request.scenario;
  record.variant = request.variant;
  record.device.kind = device_kind_name(request.device);
  record.scale = scale_name(request.scale);
  record.steps = request.steps;
  record.budget.text = request.budget;
  record.git_commit = git_commit();
  record.timestamp = utc_timestamp();
  record.oomlab_version = oomlab_version();
  record.outcome.status = OutcomeStatus::error;
  try {
    ResolvedRun resolved = resolve_run(request);
    record.steps = resolved.steps;
    record.budget.bytes = resolved.budget.bytes;
    record.budget.profile = resolved.budget.profile;
    record.budget.text = resolved.budget.describe();
    record.alloc_conf = resolved.config.to_string();
    record.knobs = resolved.knobs.all();
    record.expected = expect_name(resolved.variant.expected);
  } catch (const std::exception&) {
    // Keep what the request said; the caller records why the run failed.
  }
  return record;
}

namespace {

void fill_device(RunRecord& record, const DeviceInfo& info) {
  record.device.kind = info.kind;
  record.device.name = info.name;
  if (info.compute_major > 0) {
    record.device.compute_capability =
        std::to_string(info.compute_major) + "." + std::to_string(info.compute_minor);
  }
  record.device.total_memory = info.total_memory;
  record.device.driver_version = info.driver_version;
  record.device.runtime_version = info.runtime_version;
  if (info.kind == "cuda" && info.compute_major > 0) {
    record.device.built_for = describe_cuda_architectures(built_cuda_architectures());
    record.device.image = describe_cuda_image(current_cuda_code().image);
    record.device.engines = reported_engines();
  }
}

void fill_memory(RunRecord& record, const memory::MemoryStats& stats,
                 const DeviceMonitor& monitor) {
  auto bytes = [](std::int64_t value) { return static_cast<std::uint64_t>(value > 0 ? value : 0); };
  record.memory.peak_allocated = bytes(stats.allocated.peak);
  record.memory.peak_reserved = bytes(stats.reserved.peak);
  record.memory.peak_device_used = monitor.peak_used();
  for (memory::Tag tag : memory::all_tags()) {
    record.memory.per_tag_peak[memory::tag_name(tag)] = bytes(stats.tag(tag).peak);
  }
  record.memory.num_ooms = stats.num_ooms;
  record.memory.num_alloc_retries = stats.num_alloc_retries;
}

void fill_timing(RunRecord& record, const RunContext& context) {
  record.step_seconds = context.step_seconds();  // every step, the warm-up ones too
  record.warmup_steps = context.warmup_steps();
  for (const auto& [name, value] : context.metrics()) {
    if (std::isfinite(value)) {
      record.metrics[name] = value;
    } else {
      record.warnings.push_back("metric " + name + " was " + std::to_string(value) +
                                " (not a number) and is left out");
    }
  }
  // The steady rate: the steps after the warm-up (all steps when none followed it).
  const RunContext::Measured measured = context.measured();
  // dry does no work, so a rate there would be fiction.
  if (!context.work_unit().empty() && measured.seconds > 0 && !context.device().is_dry()) {
    record.throughput.value = measured.work / measured.seconds;
    record.throughput.unit = context.work_unit();
  }
}

// Runs the scenario and records how it ended; the OOM and error outcomes come from here.
// Returns the OOM's facts when it ended in one.
std::optional<memory::OomInfo> run_scenario(const ResolvedRun& resolved, const RunRequest& request,
                                            RunContext& context, RunRecord& record) {
  ProgressLine progress(context, request.scenario + "/" + request.variant, request.progress);
  try {
    resolved.scenario->run(resolved.variant.name, context);
    record.outcome = Outcome{OutcomeStatus::ok, "", -1, "", 0};
  } catch (const memory::OomError& e) {
    record.outcome = Outcome{OutcomeStatus::oom, memory::diagnosis_name(e.info().diagnosis),
                             context.step_in_progress(), e.what(), 0};
    return e.info();
  } catch (const std::exception& e) {
    record.outcome = Outcome{OutcomeStatus::error, "", context.step_in_progress(), e.what(), 0};
  } catch (...) {
    record.outcome = Outcome{OutcomeStatus::error, "", context.step_in_progress(),
                             "the scenario threw something that is not a std::exception", 0};
  }
  return std::nullopt;
}

struct Need {
  std::size_t allocated = 0;  // live bytes at the peak
  std::size_t reserved = 0;   // what the allocator holds at its peak: the card it needs
};

// The run's peaks without a cap: the same variant, knobs, scale and allocator settings planned
// on dry with no budget (dry makes exactly the requests cuda and host make). nullopt when the
// plan fails for another reason.
std::optional<Need> plan_need(const ResolvedRun& resolved, const RunRequest& request) {
  memory::AllocatorConfig config = resolved.config;
  config.budget = memory::AllocatorConfig::kUnlimited;
  const ProfilingPaused paused;  // --profile times the measured run only
  try {
    Device device(DeviceKind::dry, config);
    RunContext context(device, request.scale, resolved.steps, resolved.knobs);
    context.set_quiet(true);
    resolved.scenario->run(resolved.variant.name, context);
    const memory::MemoryStats stats = device.allocator().stats();
    return Need{static_cast<std::size_t>(stats.allocated.peak), static_cast<std::size_t>(stats.reserved.peak)};
  } catch (...) {
    return std::nullopt;
  }
}

// The OOM seen with the whole run's need: its diagnosis (capacity when the run's bytes exceed
// the budget, fragmentation when they fit) and a message that says how much is missing.
void explain_with_need(memory::OomInfo info, const Need& need, Outcome& outcome) {
  info.need_allocated = need.allocated;
  info.need_reserved = need.reserved;
  // A leak named by the leak detector keeps its diagnosis and its site-specific remedy.
  if (info.diagnosis != memory::Diagnosis::leak) memory::diagnose(info);
  outcome.diagnosis = memory::diagnosis_name(info.diagnosis);
  outcome.message = memory::OomError(std::move(info)).what();
}

}  // namespace

RunRecord run_variant_in_process(const RunRequest& request) {
  RunRecord record = make_base_record(request);
  try {
    ResolvedRun resolved = resolve_run(request);
    fill_device(record, query_device_info(request.device));
    Device device(request.device, resolved.config);
    // On host/dry the monitor adds what a real card would hold outside the allocator.
    DeviceMonitor monitor(device, kMonitorInterval,
                          resolved.budget.context_bytes + resolved.config.simulated_external);
    RunContext context(device, request.scale, resolved.steps, resolved.knobs);
    context.set_quiet(request.quiet);
    context.set_note_label(request.scenario + "/" + request.variant);
    context.set_shard_role(request.shard);
    if (request.device == DeviceKind::cuda && request.shard.nccl_id.empty()) {
      context.set_rank_launcher(
          [&request](int rank, const std::string& nccl_id) { return launch_rank_process(request, rank, nccl_id); });
    }
    std::optional<OpProfiler> profiler;
    if (request.profile) profiler.emplace(device);
    context.set_profiler(profiler ? &*profiler : nullptr);  // reset after the warm-up steps
    const std::optional<memory::OomInfo> oom = run_scenario(resolved, request, context, record);
    monitor.stop();
    fill_memory(record, device.allocator().stats(), monitor);
    memory::add_event_counts(device.allocator().trace(), record.metrics);  // baselines hold them
    const bool planned_uncapped = request.device == DeviceKind::dry &&
                                  resolved.config.budget == memory::AllocatorConfig::kUnlimited;
    std::optional<Need> need;
    if (planned_uncapped) {
      need = Need{record.memory.peak_allocated, record.memory.peak_reserved};
    } else if (request.plan_need && request.shard.nccl_id.empty()) {
      need = plan_need(resolved, request);
    }
    if (need) {
      record.memory.need = need->allocated;
      record.memory.need_reserved = need->reserved;
    }
    if (oom && need) explain_with_need(*oom, *need, record.outcome);
    fill_timing(record, context);
    if (profiler) {
      for (const OpProfiler::Total& total : profiler->totals()) {
        record.metrics["profile_ms." + total.name] = total.milliseconds;
      }
    }
    if (!request.trace_path.empty()) {
      // The run gave its answer; a trace that cannot be written does not change it.
      try {
        write_file_atomically(request.trace_path, json_text(memory::chrome_trace(device.allocator())));
        const std::string dropped = device.allocator().trace().dropped_note();
        if (!dropped.empty()) record.warnings.push_back(dropped);
      } catch (const std::exception& e) {
        record.warnings.push_back(kTraceNotWritten + std::string(e.what()));
      }
    }
    if (oom && !request.oom_dump_path.empty()) {  // the last events and the segments at the OOM
      try {
        write_file_atomically(request.oom_dump_path,
                              json_text(memory::oom_dump(device.allocator(), record.outcome.message)));
      } catch (const std::exception& e) {
        record.warnings.push_back(kOomDumpNotWritten + std::string(e.what()));
      }
    }
  } catch (const std::exception& e) {
    // Failures around the scenario (the device): the run did not give its answer.
    record.outcome = Outcome{OutcomeStatus::error, "", -1, e.what(), 0};
  }
  record.matches_expectation = outcome_matches(record.expected, record.outcome.status);
  return record;
}

}  // namespace oomlab
