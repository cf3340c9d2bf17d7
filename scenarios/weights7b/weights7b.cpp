#include "scenarios/weights7b/weights7b.hpp"

#include <cstdlib>
#include <stdexcept>

#include "harness/memory/size.hpp"
#include "harness/runner/run_context.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/weights7b/checkpoint_cache.hpp"
#include "scenarios/weights7b/weight_loader.hpp"
#include "scenarios/weights7b/weights_check.hpp"

namespace oomlab::scenarios {
namespace {

using namespace weights7b;

const char* const kBroken = "broken";
const char* const kFixed = "fixed";
const char* const kFixedInt8 = "fixed-int8";
const char* const kFixedBf16File = "fixed-bf16-file";

std::int64_t parameter_count(const CheckpointSource& source) {
  std::int64_t total = 0;
  for (const TensorEntry& entry : source.tensors()) total += entry.numel();
  return total;
}

}  // namespace

Weights7bPlan weights7b_plan(Scale scale) {
  switch (scale) {
    case Scale::tiny: return {"llama-tiny", 256 * KiB};
    case Scale::small: return {"llama-small", 16 * MiB};
    case Scale::full: return {"llama-7b", 64 * MiB};
  }
  throw std::invalid_argument("unknown scale");
}

std::string Weights7bScenario::summary() const {
  return "7B checkpoint load: whole-file f32 upload + cast (6 B/param) vs streamed bf16/int8";
}

std::vector<VariantSpec> Weights7bScenario::variants() const {
  return {
      {kBroken, "whole f32 file into host memory, uploaded at once, cast on the device", Expect::oom},
      {kFixed, "stream the f32 file through a pinned double-buffered ring, cast chunk by chunk", Expect::ok},
      {kFixedInt8, "stream the f32 file, quantise rows to int8 absmax on the fly", Expect::ok},
      {kFixedBf16File, "stream a bf16 file straight into the weights (no device staging)", Expect::ok},
  };
}

std::string Weights7bScenario::budget(Scale scale) const {
  switch (scale) {
    // tiny/small: like the 24 GiB card at full scale, above the fixed load (2 B/param + ring)
    // and below the broken load's first request (the 4 B/param f32 upload), segment rounding
    // included.
    case Scale::tiny: return "10MiB";
    case Scale::small: return "384MiB";
    case Scale::full: return "rtx4090";
  }
  throw std::invalid_argument("unknown scale");
}

int Weights7bScenario::default_steps(Scale) const { return 1; }  // one load

void Weights7bScenario::run(const std::string& variant, RunContext& context) const {
  if (variant != kBroken && variant != kFixed && variant != kFixedInt8 && variant != kFixedBf16File) {
    throw std::invalid_argument("weights7b: unknown variant '" + variant + "'");
  }
  const Weights7bPlan plan = weights7b_plan(context.scale());
  Device& device = context.device();
  const DType file_dtype = variant == kFixedBf16File ? DType::bf16 : DType::f32;
  const CheckpointSource source = checkpoint_for(device.kind(), plan.preset, file_dtype,
                                                 [&](const std::string& line) { context.note(line); });
  const std::int64_t parameters = parameter_count(source);
  context.set_metric("parameters", static_cast<double>(parameters));
  context.set_metric("file_bytes", static_cast<double>(source.data_bytes()));
  if (source.file() && std::getenv("OOMLAB_WEIGHTS7B_COLD")) {
    source.file()->drop_page_cache();  // cold-cache measurement: the load reads from disk
    context.set_metric("cold_cache", 1);
  }

  LoadStats stats;
  LoadedWeights weights;
  context.begin_step(0);
  if (variant == kBroken) {
    // Read everything, upload everything in f32, cast on the device: 4 + 2 bytes per parameter.
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
  context.set_metric("weights_bytes_per_parameter",
                     static_cast<double>(weights.bytes()) / static_cast<double>(parameters));
  context.set_metric("device_staging_bytes", static_cast<double>(stats.device_staging_bytes));
  context.set_metric("host_staging_bytes", static_cast<double>(stats.host_staging_bytes));
  context.set_metric("staging_chunks", static_cast<double>(stats.chunks));
  context.set_metric("allocate_seconds", stats.allocate_seconds);
  context.set_metric("setup_seconds", stats.setup_seconds);
  context.set_metric("release_seconds", stats.release_seconds);
  context.set_metric("host_copy_seconds", stats.host_copy_seconds);
  context.set_metric("slot_wait_seconds", stats.slot_wait_seconds);
  context.set_metric("peak_bytes_per_parameter",
                     static_cast<double>(device.allocator().stats().allocated.peak) /
                         static_cast<double>(parameters));

  // Checks that compare runs: bf16 loads must agree bit for bit (the digest's low 52 bits are
  // exact in a double); int8 must stay within its rounding bound. Skipped on dry (no data) and at
  // full scale (they would copy 13.5 GB back to the host).
  if (!source.has_data() || context.scale() == Scale::full) return;
  if (variant == kFixedInt8) {
    context.set_metric("int8_error_over_bound", int8_error_over_bound(weights, source));
  } else {
    context.set_metric("weights_digest52",
                       static_cast<double>(weights_digest(weights) & ((std::uint64_t{1} << 52) - 1)));
  }
}

OOMLAB_REGISTER_SCENARIO(Weights7bScenario);

}  // namespace oomlab::scenarios
