// Adam over a network's parameters: kernels/transformer's fused AdamW with weight decay 0.
// The moments (f32, Tag::optimizer) are allocated when the optimizer is built, so memory at step
// boundaries is flat from the first step on (PyTorch allocates them at the first step instead).
#pragma once
#include <vector>

#include "kernels/transformer/adamw.hpp"
#include "scenarios/models/srgan/conv_layer.hpp"

namespace oomlab::srgan {

class Adam {
 public:
  // `parameters` must outlive the optimizer (they are the network's own members).
  Adam(Device& device, std::vector<Parameter*> parameters, ops::AdamWConfig config);

  // One update of every parameter from its grad; counts steps from 1.
  void step();
  int steps_taken() const { return step_; }

 private:
  std::vector<Parameter*> parameters_;
  std::vector<Tensor> first_moments_, second_moments_;  // [optimizer]
  ops::AdamWConfig config_;
  int step_ = 0;
};

}  // namespace oomlab::srgan
