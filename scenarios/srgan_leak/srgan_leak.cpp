#include "scenarios/srgan_leak/srgan_leak.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "harness/leak/leak_detector.hpp"
#include "harness/leak/leak_metrics.hpp"
#include "harness/memory/oom_error.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/tags.hpp"
#include "harness/runner/run_context.hpp"
#include "kernels/conv/reduce.hpp"
#include "scenarios/models/srgan/scalar_readback.hpp"
#include "scenarios/models/srgan/synthetic_pairs.hpp"

namespace oomlab::scenarios {
namespace {

const char* const kBroken = "broken";
const char* const kFixed = "fixed";
const char* const kFixedBf16 = "fixed-bf16";
const char* const kLeakSite = "epoch_stats.append(real_features)";
constexpr std::uint32_t kDataSeed = 2024;

using LayerMeans = std::array<float, srgan::kDiscriminatorLayers>;

// Every layer's mean activation (PyTorch's `feature.mean().item()` per layer), reduced into one
// device tensor and queued for an asynchronous read-back into `readback`'s slots: no host wait
// here, mid-step; the values are there after readback.wait().
void queue_layer_means(const srgan::FeatureMaps& features, srgan::ScalarReadback& readback) {
  memory::TagScope tag(memory::Tag::activations);
  Tensor means = Tensor::empty(features[0].device(), {srgan::kDiscriminatorLayers}, DType::f32);
  for (int l = 0; l < srgan::kDiscriminatorLayers; ++l) ops::mean(features[l], means.slice(l, l + 1));
  readback.queue(means, 0);
}

LayerMeans read_layer_means(const srgan::ScalarReadback& readback) {
  LayerMeans means{};
  for (int l = 0; l < srgan::kDiscriminatorLayers; ++l) means[l] = readback.value(l);
  return means;
}

// Where the training thread waited on the host, per step, for the run record: a GPU step that
// is shorter than the wall-clock step is idling on one of these (or on kernel launches).
class HostWaits {
 public:
  void add(int step, const srgan::SyntheticPairs::BatchTiming& batch, double step_end_wait_ms) {
    render_ms_.push_back(batch.render_ms);
    if (step == 0) {  // nothing was prefetched for it: rendered on demand
      first_batch_ms_ = batch.wait_ms;
      return;
    }
    batch_wait_ms_.push_back(batch.wait_ms);
    step_end_wait_ms_.push_back(step_end_wait_ms);
  }
  void record(RunContext& context) const {
    if (render_ms_.empty()) return;
    context.set_metric("first_batch_ms", first_batch_ms_);
    context.set_metric("batch_render_ms", mean(render_ms_));
    if (batch_wait_ms_.empty()) return;
    // The step's wait for the prefetched batch: > 0 when the worker is slower than a step.
    context.set_metric("batch_wait_ms", mean(batch_wait_ms_));
    context.set_metric("batch_wait_ms_max", *std::max_element(batch_wait_ms_.begin(), batch_wait_ms_.end()));
    // The step's one wait for the GPU (loss read-back): ~0 when the GPU idles on the host.
    context.set_metric("step_end_wait_ms", mean(step_end_wait_ms_));
  }

 private:
  static double mean(const std::vector<double>& values) {
    return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  }
  double first_batch_ms_ = 0;
  std::vector<double> render_ms_, batch_wait_ms_, step_end_wait_ms_;
};

// A device copy of the maps under Tag::retained: what `epoch_stats.append(features)` keeps alive
// (the copy gives the kept bytes their own tag, so the leak has a name in every report).
srgan::FeatureMaps keep_on_device(const srgan::FeatureMaps& features) {
  memory::TagScope tag(memory::Tag::retained);
  srgan::FeatureMaps kept;
  for (int l = 0; l < srgan::kDiscriminatorLayers; ++l) {
    kept[l] = Tensor::empty(features[l].device(), features[l].shape(), features[l].dtype());
    kept[l].copy_from(features[l]);
  }
  return kept;
}

}  // namespace

SrganLeakPlan srgan_leak_plan(Scale scale) {
  SrganLeakPlan plan;
  // The scales differ only in the model and the image side.
  plan.model = scale == Scale::tiny ? srgan::SrganConfig::tiny() : srgan::SrganConfig::full();
  plan.low_res_size = PerScale<int>{16, 64, 256}.at(scale);
  plan.batch_size = 4;
  plan.iterations_per_epoch = 12;
  plan.epochs = 2;
  // The loop's step boundaries are exact (fixed shapes, no data-dependent allocations), so a
  // shorter window than the default is safe: a leak is confirmed at the 10th boundary (step 9),
  // three steps before the first epoch ends.
  plan.detector.window = 12;
  plan.detector.floor_span = 2;
  plan.detector.min_floor_points = 8;
  return plan;
}

std::vector<KnobSpec> SrganLeakScenario::knobs() const {
  return {KnobSpec::integer("batch", "image pairs per training step", 1, 4096),
          KnobSpec::integer("lr_size", "low-resolution side in pixels (the generator outputs 4x; the "
                                                "discriminator halves it 4 times)", 4, 8192, 4),
          KnobSpec::choice("dtype", "f32, or bf16 mixed precision (f32 master weights and Adam moments)",
                           {"f32", "bf16"})};
}

std::map<std::string, std::string> SrganLeakScenario::variant_knobs(const std::string& variant, Scale scale) const {
  const SrganLeakPlan plan = srgan_leak_plan(scale);
  // The fix, then bf16 mixed precision: activations and the weights the convs read in bf16
  // (tensor cores), f32 master weights and Adam moments.
  return {{"batch", std::to_string(plan.batch_size)},
          {"lr_size", std::to_string(plan.low_res_size)},
          {"dtype", variant == kFixedBf16 ? "bf16" : "f32"}};
}

SrganLeakPlan srgan_leak_plan_with(SrganLeakPlan plan, const KnobValues& knobs) {
  if (knobs.has("batch")) plan.batch_size = static_cast<int>(knobs.integer("batch"));
  if (knobs.has("lr_size")) plan.low_res_size = static_cast<int>(knobs.integer("lr_size"));
  if (knobs.has("dtype")) plan.model.dtype = knobs.text("dtype") == "bf16" ? DType::bf16 : DType::f32;
  return plan;
}

void train_srgan_leak(const std::string& variant, RunContext& context, SrganLeakHistory* history,
                      const KnobValues& knobs) {
  if (variant != kBroken && variant != kFixed && variant != kFixedBf16) {
    throw std::invalid_argument("srgan_leak: unknown variant '" + variant + "'");
  }
  const SrganLeakPlan plan = srgan_leak_plan_with(
      srgan_leak_plan(context.scale()),
      knobs.all().empty() ? KnobValues(SrganLeakScenario().variant_knobs(variant, context.scale())) : knobs);
  Device& device = context.device();
  leak::LeakDetector detector(context.allocator(), plan.detector);
  SrganLeakHistory local;
  SrganLeakHistory& out = history ? *history : local;

  srgan::SrganTrainer trainer(device, plan.model);
  srgan::SyntheticPairs data(kDataSeed, plan.low_res_size);

  // The epoch statistic both variants report: each layer's mean activation over the iterations.
  std::vector<srgan::FeatureMaps> epoch_stats;  // broken: the real features, on the device
  LayerMeans layer_sums{};                       // fixed: host scalars
  int iterations_seen = 0;
  srgan::ScalarReadback step_means(device, srgan::kDiscriminatorLayers);  // fixed: this step's
  bool step_means_queued = false;
  srgan::TrainHooks hooks;
  if (variant == kBroken) {
    hooks.on_real_features = [&](const srgan::FeatureMaps& real_features) {
      // THE BUG: the device tensors outlive the step, every step.
      leak::LeakSite site(detector, kLeakSite);
      epoch_stats.push_back(keep_on_device(real_features));
      out.retained_bytes_per_iteration = 0;
      for (const Tensor& f : real_features) out.retained_bytes_per_iteration += f.nbytes();
    };
  } else {
    hooks.on_real_features = [&](const srgan::FeatureMaps& real_features) {
      // THE FIX: reduce now, keep host scalars, let the features go with the step (the means
      // reach the host with the step's losses, in the same wait; added up after the step).
      queue_layer_means(real_features, step_means);
      step_means_queued = true;
    };
  }
  auto add_step_means = [&] {
    if (!step_means_queued) return;
    step_means.wait();  // already done: train_step waited for the stream
    const LayerMeans means = read_layer_means(step_means);
    for (int l = 0; l < srgan::kDiscriminatorLayers; ++l) layer_sums[l] += means[l];
    ++iterations_seen;
    step_means_queued = false;
  };
  auto epoch_statistics = [&]() {
    LayerMeans means{};
    if (variant == kBroken) {  // what the list was kept for: computed from every kept map
      LayerMeans sums{};
      srgan::ScalarReadback kept_means(device, srgan::kDiscriminatorLayers);
      for (const srgan::FeatureMaps& maps : epoch_stats) {
        queue_layer_means(maps, kept_means);
        kept_means.wait();
        const LayerMeans means_of_step = read_layer_means(kept_means);
        for (int l = 0; l < srgan::kDiscriminatorLayers; ++l) sums[l] += means_of_step[l];
      }
      for (int l = 0; l < srgan::kDiscriminatorLayers; ++l) means[l] = sums[l] / static_cast<float>(epoch_stats.size());
    } else {
      for (int l = 0; l < srgan::kDiscriminatorLayers; ++l)
        means[l] = layer_sums[l] / static_cast<float>(iterations_seen);
    }
    return means;
  };

  bool leak_noted = false;
  HostWaits host_waits;
  auto record_metrics = [&] {
    leak::record_leak_metrics(detector, context);
    if (!device.is_dry()) host_waits.record(context);  // dry has no pixels and no waits
  };
  context.set_warmup_steps(1);  // step 0 loads the kernels and sets up: out of the steady rate
  try {
    for (int step = 0; step < context.steps(); ++step) {
      context.begin_step(step);
      {
        srgan::ImageBatch batch = data.batch(device, plan.batch_size, step, plan.model.dtype);
        const srgan::SyntheticPairs::BatchTiming batch_timing = data.last_timing();
        // The next batch's images are made on a worker thread while this step runs.
        if (step + 1 < context.steps()) data.prefetch(device, plan.batch_size, step + 1, plan.model.dtype);
        out.losses.push_back(trainer.train_step(batch, hooks));
        add_step_means();
        host_waits.add(step, batch_timing, trainer.last_readback_wait_ms());
      }
      context.add_work(plan.batch_size, "images/s");
      context.end_step();
      // A step boundary: the step's activations and batch are gone; what is left stays.
      const leak::LeakVerdict& verdict = detector.sample(step);
      if (verdict.leak && !leak_noted) {
        context.note("srgan_leak/" + variant + ": " + verdict.describe());
        leak_noted = true;
      }
      if ((step + 1) % plan.iterations_per_epoch == 0) out.epoch_layer_means.push_back(epoch_statistics());
    }
  } catch (const memory::OomError& error) {
    record_metrics();
    detector.rethrow(error);
  }
  record_metrics();
}

namespace {

// A story's steps: every iteration of its epochs.
int srgan_leak_steps(Scale scale) {
  const SrganLeakPlan plan = srgan_leak_plan(scale);
  return plan.iterations_per_epoch * plan.epochs;
}

}  // namespace

// The budgets: the broken run's peak passes them in the second epoch (step 15 on tiny, 16 on
// small, 14 on full) while fixed fits with room to spare (4 MiB, 366 MiB, 4.81 GiB).
SrganLeakScenario::SrganLeakScenario()
    : DeclaredScenario(
          {"srgan_leak",
           "SR-GAN keeps the discriminator's real features for epoch statistics: +feature bytes every step",
           {
               {kBroken, "appends the real batch's feature maps (device tensors) to a list every iteration",
                Expect::oom},
               {kFixed, "reduces each feature map to its mean at once and keeps host scalars", Expect::ok},
               {kFixedBf16, "the fix in bf16 mixed precision (f32 master weights): half the activations, tensor cores",
                Expect::ok},
           },
           {"7MiB", "850MiB", "rtx3060-12g"},
           {srgan_leak_steps(Scale::tiny), srgan_leak_steps(Scale::small), srgan_leak_steps(Scale::full)}}) {}

void SrganLeakScenario::run(const std::string& variant, RunContext& context) const {
  train_srgan_leak(variant, context, nullptr, knobs_of(variant, context));
}

OOMLAB_REGISTER_SCENARIO(SrganLeakScenario);

}  // namespace oomlab::scenarios
