#include "scenarios/val_blowup/val_blowup.hpp"

#include <algorithm>
#include <stdexcept>

#include "harness/memory/site.hpp"
#include "harness/memory/tags.hpp"
#include "harness/runner/run_context.hpp"
#include "kernels/conv/l1_loss.hpp"
#include "scenarios/models/srgan/adam.hpp"
#include "scenarios/models/srgan/generator.hpp"
#include "scenarios/models/srgan/losses.hpp"
#include "scenarios/models/srgan/synthetic_pairs.hpp"
#include "scenarios/models/srgan/trainer.hpp"

namespace oomlab::scenarios {
namespace {

const char* const kBroken = "broken";
const char* const kFixedInference = "fixed-inference";
const char* const kFixedChunked = "fixed-chunked";

constexpr std::uint32_t kDataSeed = 2024;
constexpr std::int64_t kValidationBatchIndex = 1'000'000;  // images never seen in training

// The validation forward of each variant: (4B, 4H, 4W, 3) from (4B, H, W, 3).
Tensor validation_forward(const std::string& variant, srgan::SrganGenerator& generator,
                          const Tensor& low_res, int chunk_batch) {
  if (variant == kBroken) {
    // THE BUG: the training forward. Every activation it saves stays alive until it returns,
    // so its peak is the whole graph of 4x the training batch.
    return generator.forward_train(low_res).output;
  }
  if (variant == kFixedInference) {
    // THE FIX: nothing is kept for a backward, each activation is freed once consumed.
    return generator.forward_inference(low_res);
  }
  // THE OTHER FIX: the graph-keeping forward on chunks that fit; each chunk's graph is freed
  // before the next chunk starts, its output copied into the full batch's output.
  memory::TagScope tag(memory::Tag::activations);
  const std::int64_t n = low_res.dim(0);
  Tensor outputs = Tensor::empty(low_res.device(), generator.output_shape(low_res.shape()), low_res.dtype());
  for (std::int64_t begin = 0; begin < n; begin += chunk_batch) {
    const std::int64_t end = std::min<std::int64_t>(begin + chunk_batch, n);
    srgan::GeneratorForward chunk = generator.forward_train(low_res.slice(begin, end));
    outputs.slice(begin, end).copy_from(chunk.output);
  }
  return outputs;
}

}  // namespace

ValBlowupPlan val_blowup_plan(Scale scale) {
  ValBlowupPlan plan;
  switch (scale) {
    case Scale::tiny:
      // The tiny model's width with the full model's depth, so the kept graph has the same share
      // of residual-block maps as at full scale.
      plan.model = srgan::SrganConfig::tiny();
      plan.model.residual_blocks = 8;
      // 40x40 -> 160x160: the largest maps (12.5 MiB at the validation batch) are above the
      // allocator's 10 MiB large-request line, so they get segments of their own size, as at
      // full scale, instead of shared 20 MiB ones.
      plan.low_res_size = 40;
      plan.train_batch = 4;
      break;
    case Scale::small:
      plan.model = srgan::SrganConfig::full();
      plan.low_res_size = 32;
      plan.train_batch = 16;
      break;
    case Scale::full:
      plan.model = srgan::SrganConfig::full();  // the issue's: 128x128 -> 512x512 at batch 16
      plan.low_res_size = 128;
      plan.train_batch = 16;
      break;
  }
  plan.validation_batch = 4 * plan.train_batch;
  plan.chunk_batch = plan.train_batch;
  return plan;
}

ValBlowupPlan val_blowup_plan_with(ValBlowupPlan plan, const KnobValues& knobs) {
  if (knobs.has("batch")) plan.train_batch = plan.chunk_batch = static_cast<int>(knobs.integer("batch"));
  if (knobs.has("val_batch")) plan.validation_batch = static_cast<int>(knobs.integer("val_batch"));
  if (knobs.has("lr_size")) plan.low_res_size = static_cast<int>(knobs.integer("lr_size"));
  if (knobs.has("dtype")) plan.model.dtype = knobs.text("dtype") == "bf16" ? DType::bf16 : DType::f32;
  return plan;
}

std::vector<KnobSpec> ValBlowupScenario::knobs() const {
  return {KnobSpec::integer("batch", "training batch (B); fixed-chunked validates in chunks of it", 1, 4096),
          KnobSpec::integer("val_batch", "validation batch (the story's is 4B)", 1, 65536),
          KnobSpec::integer("lr_size", "low-resolution side in pixels (the generator outputs 4x; the "
                                                "discriminator halves it 4 times)", 4, 8192, 4),
          KnobSpec::choice("dtype", "f32, or bf16 (activations and the weights the convs read)", {"f32", "bf16"})};
}

std::map<std::string, std::string> ValBlowupScenario::variant_knobs(const std::string&, Scale scale) const {
  const ValBlowupPlan plan = val_blowup_plan(scale);
  return {{"batch", std::to_string(plan.train_batch)},
          {"val_batch", std::to_string(plan.validation_batch)},
          {"lr_size", std::to_string(plan.low_res_size)},
          {"dtype", plan.model.dtype == DType::bf16 ? "bf16" : "f32"}};
}

ValBlowupResult run_val_blowup(const std::string& variant, RunContext& context, const KnobValues& knobs) {
  if (variant != kBroken && variant != kFixedInference && variant != kFixedChunked) {
    throw std::invalid_argument("val_blowup: unknown variant '" + variant + "'");
  }
  const ValBlowupPlan plan = val_blowup_plan_with(val_blowup_plan(context.scale()), knobs);
  Device& device = context.device();
  memory::CachingAllocator& allocator = context.allocator();
  const DType dtype = plan.model.dtype;
  srgan::SyntheticPairs data(kDataSeed, plan.low_res_size);
  srgan::SrganGenerator generator(device, plan.model);
  srgan::Adam adam(device, generator.parameters(), ops::AdamWConfig{1e-4f});
  ValBlowupResult result;

  // Training: identical in every variant, and it fits.
  allocator.push_scope();
  context.set_warmup_steps(1);  // step 0 loads the kernels and sets up: out of the steady rate
  for (int step = 0; step < context.steps(); ++step) {
    context.begin_step(step);
    memory::SiteScope site("training step");
    const srgan::ImageBatch batch = data.batch(device, plan.train_batch, step, dtype);
    // The next batch's images (the validation batch after the last step) are made on a worker
    // thread while this step runs.
    if (step + 1 < context.steps()) {
      data.prefetch(device, plan.train_batch, step + 1, dtype);
    } else {
      data.prefetch(device, plan.validation_batch, kValidationBatchIndex, dtype);
    }
    result.last_train_loss = srgan::train_generator_pixel_step(generator, adam, batch);
    context.add_work(plan.train_batch, "samples/s");
    context.end_step();
  }
  result.training_peak_bytes = allocator.pop_scope().peak_allocated;
  context.set_metric("training_peak_bytes", static_cast<double>(result.training_peak_bytes));
  context.set_metric("train_l1", result.last_train_loss);

  // Validation at 4x the training batch: where the variants differ.
  context.begin_step(context.steps());
  allocator.push_scope();
  try {
    memory::SiteScope site("validation (batch " + std::to_string(plan.validation_batch) + ")");
    const srgan::ImageBatch batch = data.batch(device, plan.validation_batch, kValidationBatchIndex, dtype);
    Tensor outputs = validation_forward(variant, generator, batch.low_res, plan.chunk_batch);
    memory::TagScope tag(memory::Tag::activations);
    Tensor l1 = Tensor::empty(device, {1}, DType::f32);
    ops::l1_loss_forward(outputs, batch.high_res, l1);
    result.validation_l1 = srgan::read_scalar(l1);
    result.validation_outputs = outputs.to_host_f32();
  } catch (...) {
    allocator.pop_scope();  // the allocator stays usable after an OOM: leave its scopes balanced
    throw;
  }
  result.validation_peak_bytes = allocator.pop_scope().peak_allocated;
  // The validation images count as work too: the step's time is in the throughput, and the
  // fixes differ only here (an OOM leaves them out with the step).
  context.add_work(plan.validation_batch, "samples/s");
  context.end_step();
  context.set_metric("validation_peak_bytes", static_cast<double>(result.validation_peak_bytes));
  context.set_metric("validation_l1", result.validation_l1);
  return result;
}

ValBlowupScenario::ValBlowupScenario()
    : DeclaredScenario(
          {"val_blowup",
           "SR-GAN: training fits, validation at 4x the batch keeps the graph and runs out of memory",
           {
               {kBroken, "validation runs the training forward: every activation kept at 4x the batch", Expect::oom},
               {kFixedInference, "validation runs the inference forward: each activation freed once consumed",
                Expect::ok},
               {kFixedChunked, "validation runs the training forward on chunks of the training batch", Expect::ok},
           },
           {"42MiB", "640MiB", "rtx3060-12g"},
           {2, 4, 4}}) {}

void ValBlowupScenario::configure(const std::string&, Scale scale, memory::AllocatorConfig& config) const {
  // At tiny scale the largest maps (12.5 MiB) are no bigger than the allocator's 20 MiB segment
  // class, so fixed segments would add slack as large as the story and the OOM would read as
  // fragmentation; expandable segments map the large pool in 20 MiB granules too, as PyTorch
  // does. Without the cache (caching:false) the budget measures the bytes, as the exact-size
  // segments of the larger scales' maps (64 MiB to 4 GiB) do with the defaults.
  if (scale == Scale::tiny) config.caching = false;
}

void ValBlowupScenario::run(const std::string& variant, RunContext& context) const {
  run_val_blowup(variant, context, knobs_of(variant, context));
}

OOMLAB_REGISTER_SCENARIO(ValBlowupScenario);

}  // namespace oomlab::scenarios
