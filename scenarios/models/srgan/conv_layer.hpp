// One convolution with bias and its trainable parameters, the building block of both networks.
// Allocations: value and master under Tag::weights, grad under Tag::grads (made once, when the
// layer is built); the forward's output under whatever tag the caller's TagScope sets.
#pragma once
#include <cstdint>
#include <random>
#include <string>

#include "kernels/conv/conv2d.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::srgan {

// A trainable tensor: what the forward reads, its f32 master copy when that is not f32, and its
// gradient (overwritten by each backward, like PyTorch's .grad after zero_grad).
struct Parameter {
  std::string name;
  Tensor value;   // config dtype                    [weights]
  Tensor master;  // f32, undefined when value is f32 [weights]
  Tensor grad;    // value's dtype                   [grads]
};

struct ConvLayer {
  Parameter weight;  // (K, R, S, C)
  Parameter bias;    // (K)
  ops::Conv2dParams params;
  // Profile range names, one per pass, by shape ("conv 64->64 3x3 fwd"): layers of one shape
  // add up, so a profile says which kernel shapes a step's time goes to.
  std::string forward_range, backward_data_range, backward_weight_range;

  // y = conv(x) + bias, then the epilogue (the layer's activation, a residual add), allocated here.
  Tensor forward(const Tensor& x, const ops::ConvEpilogue& epilogue = {}) const;
  // dx for the forward's input shape, then the epilogue (a gradient to add, the gradient through
  // the previous layer's activation), allocated here.
  Tensor backward_data(const Tensor& dy, const Shape& x_shape, const ops::ConvEpilogue& epilogue = {}) const;
  // weight.grad and bias.grad from the forward's input and dy (overwritten).
  void backward_weight(const Tensor& x, const Tensor& dy);
};

// The epilogues the two networks use (fused into the conv's stores; the same values as the
// separate ops, see conv2d.hpp).
// (Leaky) ReLU with this slope after the conv (ReLU: 0).
ops::ConvEpilogue then_activation(float slope);
// + addend after the conv (the residual skip, or a second gradient into the same tensor).
ops::ConvEpilogue plus(const Tensor& addend);
// backward-data: (+ addend, when defined) then back through the (leaky) ReLU that produced
// `activated` in the forward.
ops::ConvEpilogue through_activation(const Tensor& activated, float slope, const Tensor& addend = Tensor());

// Weights uniform in +-gain*sqrt(6 / fan_in) (Kaiming uniform for ReLU when gain = 1), bias in
// +-1/sqrt(fan_in) (PyTorch's default), from `rng`. On dry the values are not generated (dry has
// no storage), but the allocations are the same.
ConvLayer make_conv_layer(Device& device, const std::string& name, int in_channels,
                          int out_channels, int kernel, int stride, int padding, DType dtype,
                          float gain, std::mt19937& rng);

}  // namespace oomlab::srgan
