#include "scenarios/models/srgan/trainer.hpp"

#include "harness/device/op_profiler.hpp"
#include "harness/memory/tags.hpp"
#include "kernels/core/residual.hpp"
#include "scenarios/models/srgan/losses.hpp"

namespace oomlab::srgan {
namespace {

// Where each loss value waits for the step's one read-back.
enum LossSlot : std::size_t {
  kDiscriminatorReal,
  kDiscriminatorFake,
  kFeatureMatching,  // one per discriminator layer
  kAdversarial = kFeatureMatching + kDiscriminatorLayers,
  kPixel,
  kLossSlots
};

// [a; b] along the batch dim (stream-ordered device copies: no host wait).
Tensor concat_batches(const Tensor& a, const Tensor& b) {
  Shape shape = a.shape();
  shape[0] += b.dim(0);
  Tensor both = Tensor::empty(a.device(), shape, a.dtype());
  both.slice(0, a.dim(0)).copy_from(a);
  both.slice(a.dim(0), shape[0]).copy_from(b);
  return both;
}

}  // namespace

SrganTrainer::SrganTrainer(Device& device, const SrganConfig& config,
                           ops::AdamWConfig generator_optimizer,
                           ops::AdamWConfig discriminator_optimizer, LossWeights weights)
    : generator_(device, config),
      discriminator_(device, config),
      generator_adam_(device, generator_.parameters(), generator_optimizer),
      discriminator_adam_(device, discriminator_.parameters(), discriminator_optimizer),
      weights_(weights),
      readback_(device, kLossSlots) {}

SrganLosses SrganTrainer::train_step(const ImageBatch& batch, const TrainHooks& hooks) {
  launch_step(batch, hooks);
  // The step's one host wait, after its last kernel (outside the profiled phases): the losses
  // arrive together, where one blocking read per loss (8) drained the GPU's queue 8 times and
  // left it idle while the host launched the next kernels one by one. Same values, summed in
  // the same order as before.
  readback_.wait();
  SrganLosses losses;
  losses.discriminator = readback_.value(kDiscriminatorReal) + readback_.value(kDiscriminatorFake);
  for (int l = 0; l < kDiscriminatorLayers; ++l) losses.feature_matching += readback_.value(kFeatureMatching + l);
  losses.adversarial = readback_.value(kAdversarial);
  losses.pixel = readback_.value(kPixel);
  losses.generator = weights_.pixel * losses.pixel + weights_.feature_matching * losses.feature_matching +
                     weights_.adversarial * losses.adversarial;
  return losses;
}

void SrganTrainer::launch_step(const ImageBatch& batch, const TrainHooks& hooks) {
  memory::TagScope tag(memory::Tag::activations);
  const std::int64_t n = batch.high_res.dim(0);
  ProfilePhases phase("gan.generator_forward");
  GeneratorForward fake = generator_.forward_train(batch.low_res);
  phase.next("gan.discriminator_step");

  {  // Discriminator step: real and (detached) fake in one batch, one forward, one backward.
    Tensor both = concat_batches(batch.high_res, fake.output);
    DiscriminatorForward d_forward = discriminator_.forward(both);
    both.reset();  // d_forward.input holds it while the backward may need it
    const Tensor& logits = d_forward.logits;
    LossTerm real_term = softplus_term(logits.slice(0, n), -1.0f, 1.0f);
    LossTerm fake_term = softplus_term(logits.slice(n, 2 * n), 1.0f, 1.0f);
    Tensor d_logits = concat_batches(real_term.gradient, fake_term.gradient);
    readback_.queue(real_term.value, kDiscriminatorReal);
    readback_.queue(fake_term.value, kDiscriminatorFake);
    real_term = {};
    fake_term = {};
    discriminator_.backward(std::move(d_forward), d_logits, FeatureMaps{}, /*parameter_grads=*/true,
                            /*input_grad=*/false);
    discriminator_adam_.step();
  }

  phase.next("gan.generator_step.discriminator");
  {  // Generator step, against the updated discriminator.
    FeatureMaps real_features = discriminator_.forward(batch.high_res).features;
    if (hooks.on_real_features) hooks.on_real_features(real_features);
    DiscriminatorForward d_fake = discriminator_.forward(fake.output);

    FeatureMaps d_features;
    for (int l = 0; l < kDiscriminatorLayers; ++l) {
      LossTerm term = l1_term(d_fake.features[l], real_features[l], weights_.feature_matching);
      readback_.queue(term.value, kFeatureMatching + l);
      d_features[l] = std::move(term.gradient);
      real_features[l].reset();
    }
    LossTerm adversarial = softplus_term(d_fake.logits, -1.0f, weights_.adversarial);
    readback_.queue(adversarial.value, kAdversarial);
    Tensor d_output = discriminator_.backward(std::move(d_fake), adversarial.gradient, d_features,
                                              /*parameter_grads=*/false, /*input_grad=*/true);
    adversarial = {};
    d_features = {};

    LossTerm pixel = l1_term(fake.output, batch.high_res, weights_.pixel);
    readback_.queue(pixel.value, kPixel);
    ops::residual_add(d_output, d_output, pixel.gradient);
    pixel = {};
    fake.output.reset();
    phase.next("gan.generator_step.backward");
    generator_.backward(std::move(fake.saved), d_output);
    phase.next("gan.generator_step.adam");
    generator_adam_.step();
  }
}

float train_generator_pixel_step(SrganGenerator& generator, Adam& adam, const ImageBatch& batch) {
  memory::TagScope tag(memory::Tag::activations);
  GeneratorForward fake = generator.forward_train(batch.low_res);
  LossTerm pixel = l1_term(fake.output, batch.high_res, 1.0f);
  const float loss = read_scalar(pixel.value);
  fake.output.reset();
  generator.backward(std::move(fake.saved), pixel.gradient);
  pixel = {};
  adam.step();
  return loss;
}

}  // namespace oomlab::srgan
