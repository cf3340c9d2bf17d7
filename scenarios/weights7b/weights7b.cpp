#include "scenarios/weights7b/weights7b.hpp"

#include <cstdlib>
#include <stdexcept>

#include "harness/memory/size.hpp"
#include "harness/runner/run_context.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/weights7b/checkpoint_cache.hpp"
#include "scenarios/weights7b/weight_loader.hpp"
#include "scenarios/weights7b/weights7b_knobs.hpp"
#include "scenarios/weights7b/weights_check.hpp"

namespace oomlab::scenarios {
namespace {

using namespace weights7b;

std::int64_t parameter_count(const CheckpointSource& source) {
  std::int64_t total = 0;
  for (const TensorEntry& entry : source.tensors()) total += entry.numel();
  return total;
}

// Bytes per parameter; 0 without parameters, so a record never holds NaN or inf.
double per_parameter(double bytes, std::int64_t parameters) {
  return parameters > 0 ? bytes / static_cast<double>(parameters) : 0.0;
}

WantedCheckpoint wanted_checkpoint(const Weights7bPlan& plan) {
  return {plan.preset, plan.file_dtype, plan.model_chosen_by};
}

}  // namespace

Weights7bPlan weights7b_plan(Scale scale) {
  switch (scale) {
    case Scale::tiny: return {"llama-tiny", DType::f32, 256 * KiB, "--scale tiny"};
    case Scale::small: return {"llama-small", DType::f32, 16 * MiB, "--scale small"};
    case Scale::full: return {"llama-7b", DType::f32, 64 * MiB, "--scale full"};
  }
  throw std::invalid_argument("unknown scale");
}

// Steps: one load. tiny/small budgets: like the 24 GiB card at full scale, above the fixed load
// (2 B/param + ring) and below the broken load's first request (the 4 B/param f32 upload),
// segment rounding included.
Weights7bScenario::Weights7bScenario()
    : DeclaredScenario(
          {"weights7b",
           "7B checkpoint load: whole-file f32 upload + cast (6 B/param) vs streamed bf16/int8",
           {
               {kBroken, "whole file into host memory, uploaded at once, cast to bf16 on the device", Expect::oom},
               {kFixed, "stream the file through a pinned double-buffered ring, cast chunk by chunk", Expect::ok},
               {kFixedInt8, "stream the file, quantise rows to int8 absmax on the fly", Expect::ok},
               {kFixedBf16File, "stream a bf16 file straight into the weights (no device staging)", Expect::ok},
           },
           {"10MiB", "384MiB", "rtx4090"},
           {1, 1, 1}}) {}

std::vector<KnobSpec> Weights7bScenario::knobs() const { return weights7b_knob_specs(); }

std::map<std::string, std::string> Weights7bScenario::variant_knobs(const std::string& variant, Scale scale) const {
  return weights7b_knob_values(variant, scale);
}

void Weights7bScenario::check_knobs(const std::string& variant, Scale scale, const KnobValues& knobs) const {
  const Weights7bPlan plan = weights7b_plan(variant, scale, knobs);
  if (!given_checkpoint_path(plan.file_dtype)) return;  // generated checkpoints are the program's own
  const auto bad_input = [&](const std::exception& error) {
    return std::invalid_argument(std::string(given_checkpoint_variable(plan.file_dtype)) + ": " + error.what());
  };
  try {
    // Read as a dry run reads it, whatever the device: the headers only, checked against the
    // model and dtype this run loads. A device run maps the same files again in its child.
    checkpoint_for(DeviceKind::dry, wanted_checkpoint(plan), [](const std::string&) {});
  } catch (const safetensors::SafetensorsError& error) {
    throw bad_input(error);  // malformed, truncated, not a regular file, shards unlike the index
  } catch (const std::invalid_argument& error) {
    throw bad_input(error);  // not the model this run loads
  }
}

void Weights7bScenario::run(const std::string& variant, RunContext& context) const {
  if (variant != kBroken && variant != kFixed && variant != kFixedInt8 && variant != kFixedBf16File) {
    throw std::invalid_argument("weights7b: unknown variant '" + variant + "'");
  }
  const Weights7bPlan plan = weights7b_plan(variant, context.scale(), knobs_of(variant, context));
  Device& device = context.device();
  const CheckpointSource source = checkpoint_for(device.kind(), wanted_checkpoint(plan),
                                                 [&](const std::string& line) { context.note(line); });
  const std::int64_t parameters = parameter_count(source);
  context.set_metric("parameters", static_cast<double>(parameters));
  context.set_metric("file_bytes", static_cast<double>(source.data_bytes()));
  if (source.shard_count() > 0) context.set_metric("checkpoint_files", static_cast<double>(source.shard_count()));
  if (source.has_data() && std::getenv("OOMLAB_WEIGHTS7B_COLD")) {
    source.drop_page_cache();  // cold-cache measurement: the load reads from disk
    context.set_metric("cold_cache", 1);
  }

  LoadStats stats;
  LoadedWeights weights;
  context.begin_step(0);
  if (variant == kBroken) {
    // Read everything, upload everything in the file's dtype, cast on the device: 4 + 2 bytes
    // per parameter for an f32 file.
    weights = load_whole_file_then_cast(device, source, stats);
  } else if (variant == kFixedInt8) {
    weights = stream_load(device, source, WeightFormat::int8_rowwise, plan.chunk_bytes, stats);
  } else {
    // fixed and fixed-bf16-file: the same streamed load; a bf16 file skips the device ring.
    weights = stream_load(device, source, WeightFormat::bf16, plan.chunk_bytes, stats);
  }
  context.end_step();

  context.add_work(static_cast<double>(stats.file_bytes) / 1e9, "GB/s");
  context.set_metric("weights_bytes", static_cast<double>(weights.bytes()));
  context.set_metric("weights_bytes_per_parameter", per_parameter(static_cast<double>(weights.bytes()), parameters));
  context.set_metric("device_staging_bytes", static_cast<double>(stats.device_staging_bytes));
  context.set_metric("host_staging_bytes", static_cast<double>(stats.host_staging_bytes));
  context.set_metric("staging_chunks", static_cast<double>(stats.chunks));
  context.set_metric("allocate_seconds", stats.allocate_seconds);
  context.set_metric("setup_seconds", stats.setup_seconds);
  context.set_metric("release_seconds", stats.release_seconds);
  context.set_metric("host_copy_seconds", stats.host_copy_seconds);
  context.set_metric("slot_wait_seconds", stats.slot_wait_seconds);
  context.set_metric("peak_bytes_per_parameter",
                     per_parameter(static_cast<double>(device.allocator().stats().allocated.peak), parameters));

  // Checks that compare runs: bf16 loads must agree bit for bit (the digest's low 52 bits are
  // exact in a double); int8 must stay within its rounding bound. Skipped on dry (no data) and
  // for models above llama-small's size (7B would copy 13.5 GB back to the host).
  constexpr std::size_t kLargestChecked = 1 * GiB;
  if (!source.has_data() || weights.bytes() > kLargestChecked) return;
  if (variant == kFixedInt8) {
    context.set_metric("int8_error_over_bound", int8_error_over_bound(weights, source));
  } else {
    context.set_metric("weights_digest52",
                       static_cast<double>(weights_digest(weights) & ((std::uint64_t{1} << 52) - 1)));
  }
}

OOMLAB_REGISTER_SCENARIO(Weights7bScenario);

}  // namespace oomlab::scenarios
