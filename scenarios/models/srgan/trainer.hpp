// One SR-GAN training iteration, as PyTorch code usually writes it:
//   fake = G(low_res)                                   (graph kept for the generator step)
//   D step: D on [high_res; fake] (fake detached) ->  softplus(-D(real)) + softplus(D(fake))
//   G step: D(high_res) features (targets), D(fake) ->
//           pixel L1(fake, high_res) + feature matching sum_l L1(D_l(fake), D_l(real))
//           + adversarial softplus(-D(fake)); back through D (no D grads) into G
// and one Adam step per network. Tags: weights, grads, optimizer (made once, in the
// constructor), activations (everything a step allocates), data (the caller's batch), workspace
// (kernel scratch). Memory at step boundaries is flat unless a hook keeps something.
#pragma once
#include <functional>

#include "kernels/transformer/adamw.hpp"
#include "scenarios/models/srgan/adam.hpp"
#include "scenarios/models/srgan/discriminator.hpp"
#include "scenarios/models/srgan/generator.hpp"
#include "scenarios/models/srgan/scalar_readback.hpp"
#include "scenarios/models/srgan/synthetic_pairs.hpp"

namespace oomlab::srgan {

struct LossWeights {
  float pixel = 1.0f;
  float feature_matching = 1.0f;  // per discriminator layer
  float adversarial = 1e-3f;
};

// One iteration's losses on the host (all 0 on dry, which has no values).
struct SrganLosses {
  float discriminator = 0;     // softplus(-D(real)) + softplus(D(fake))
  float pixel = 0;             // unweighted L1
  float feature_matching = 0;  // unweighted, summed over the layers
  float adversarial = 0;       // unweighted softplus(-D(fake))
  float generator = 0;         // the weighted sum the generator minimises
};

struct TrainHooks {
  // Called once per iteration with the discriminator's feature maps of the real batch (the
  // feature-matching targets of the G step, Tag::activations). They are freed when the step
  // ends, unless the hook keeps a reference: that is how a list "kept for statistics" leaks.
  // Work the hook queues on the device's compute stream (an async read-back) has finished when
  // train_step returns: the step ends with one wait for the stream.
  std::function<void(const FeatureMaps& real_features)> on_real_features;
};

class SrganTrainer {
 public:
  SrganTrainer(Device& device, const SrganConfig& config, ops::AdamWConfig generator_optimizer = {1e-4f},
               ops::AdamWConfig discriminator_optimizer = {1e-4f}, LossWeights weights = {});

  // One iteration; its losses are read back with one host wait, after the step's last kernel.
  SrganLosses train_step(const ImageBatch& batch, const TrainHooks& hooks = {});
  // Milliseconds the last step's host wait blocked (the GPU's lead over the host; ~0 when the
  // GPU idles on the host).
  double last_readback_wait_ms() const { return readback_.last_wait_ms(); }

  SrganGenerator& generator() { return generator_; }
  SrganDiscriminator& discriminator() { return discriminator_; }

 private:
  // Launches the step's kernels and queues each loss into readback_; waits for nothing.
  void launch_step(const ImageBatch& batch, const TrainHooks& hooks);

  SrganGenerator generator_;
  SrganDiscriminator discriminator_;
  Adam generator_adam_;
  Adam discriminator_adam_;
  LossWeights weights_;
  ScalarReadback readback_;  // the losses of a step
};

// A generator-only step (the SRResNet pre-training of SR-GANs): L1 pixel loss, backward, Adam.
// Returns the loss on the host (0 on dry).
float train_generator_pixel_step(SrganGenerator& generator, Adam& adam, const ImageBatch& batch);

}  // namespace oomlab::srgan
