#include "scenarios/models/srgan/adam.hpp"

#include "harness/memory/tags.hpp"
#include "kernels/core/check.hpp"

namespace oomlab::srgan {

Adam::Adam(Device& device, std::vector<Parameter*> parameters, ops::AdamWConfig config)
    : parameters_(std::move(parameters)), config_(config) {
  OOMLAB_CHECK(config_.weight_decay == 0.0f, "srgan::Adam is plain Adam: weight_decay must be 0");
  memory::TagScope tag(memory::Tag::optimizer);
  for (const Parameter* p : parameters_) {
    first_moments_.push_back(Tensor::zeros(device, p->value.shape(), DType::f32));
    second_moments_.push_back(Tensor::zeros(device, p->value.shape(), DType::f32));
  }
}

void Adam::step() {
  ++step_;
  std::vector<ops::AdamWTensors> tensors;  // one many-tensor step
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Parameter& p = *parameters_[i];
    // With f32 parameters the master weights are the parameters themselves.
    const bool mixed = p.master.defined();
    tensors.push_back({mixed ? p.master : p.value, mixed ? p.value : Tensor(), p.grad, first_moments_[i],
                       second_moments_[i]});
  }
  ops::adamw_step(tensors, config_, step_);
}

}  // namespace oomlab::srgan
