// Loss scaling for f16 training (PyTorch's GradScaler): scale the loss gradient up so small
// gradients survive f16, unscale the gradients before the optimizer with an inf/NaN check,
// and adjust the scale on the host from the check's flag.
//
// Control flow never depends on data on dry: the flag is an output tensor, and the host reads
// it through read_found_inf(), which on dry returns the value the caller injects (false unless
// a scenario simulates an overflow), so dry replays the same step sequence deterministically.
#pragma once
#include <vector>

#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

// t *= factor in place (f32, bf16, f16).
void scale(Tensor& t, float factor);

// Every grad *= inv_scale in place; found_inf (shape (1), f32) is set to 1 when any scaled
// gradient is inf or NaN, else 0. One call covers all of a step's gradients.
void unscale_and_check(const std::vector<Tensor>& grads, float inv_scale, Tensor& found_inf);

// The flag as a bool (blocking read on cuda). On dry there is no value: returns dry_value.
bool read_found_inf(const Tensor& found_inf, bool dry_value = false);

// The dynamic loss-scale rule: on overflow halve the scale and skip the step; after
// growth_interval clean steps in a row, double it.
struct GradScaler {
  float scale = 65536.0f;
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int growth_interval = 2000;
  int clean_steps = 0;  // clean steps since the last change

  // Applies the rule for one step; returns true when the optimizer step should run.
  bool update(bool found_inf) {
    if (found_inf) {
      scale *= backoff_factor;
      clean_steps = 0;
      return false;
    }
    if (++clean_steps >= growth_interval) {
      scale *= growth_factor;
      clean_steps = 0;
    }
    return true;
  }
};

namespace cuda {
void scale(Tensor& t, float factor, memory::StreamHandle stream);
// found_inf must already be zero; it is only ever set to 1.
void unscale_and_check(Tensor& grad, float inv_scale, Tensor& found_inf, memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
