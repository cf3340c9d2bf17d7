#include "scenarios/models/srgan/conv_layer.hpp"

#include <cmath>
#include <vector>

#include "harness/device/op_profiler.hpp"
#include "harness/memory/tags.hpp"

namespace oomlab::srgan {
namespace {

using memory::Tag;
using memory::TagScope;

Parameter make_parameter(Device& device, const std::string& name, Shape shape, DType dtype,
                         float bound, std::mt19937& rng) {
  Parameter p;
  p.name = name;
  const std::size_t count = static_cast<std::size_t>(shape_numel(shape));
  std::vector<float> values;
  if (!device.is_dry()) {
    std::uniform_real_distribution<float> dist(-bound, bound);
    values.resize(count);
    for (float& v : values) v = dist(rng);
  }
  auto weights_tensor = [&](DType t) {
    TagScope tag(Tag::weights);
    return device.is_dry() ? Tensor::empty(device, shape, t) : Tensor::from_host(device, shape, t, values);
  };
  p.value = weights_tensor(dtype);
  if (dtype != DType::f32) p.master = weights_tensor(DType::f32);
  TagScope tag(Tag::grads);
  p.grad = Tensor::zeros(device, shape, dtype);
  return p;
}

}  // namespace

Tensor ConvLayer::forward(const Tensor& x, const ops::ConvEpilogue& epilogue) const {
  ProfileRange range(forward_range.c_str());
  Tensor y = Tensor::empty(x.device(), ops::conv2d_output_shape(x.shape(), weight.value.shape(), params),
                           x.dtype());
  ops::conv2d_forward(x, weight.value, bias.value, y, params, epilogue);
  return y;
}

Tensor ConvLayer::backward_data(const Tensor& dy, const Shape& x_shape, const ops::ConvEpilogue& epilogue) const {
  ProfileRange range(backward_data_range.c_str());
  Tensor dx = Tensor::empty(dy.device(), x_shape, dy.dtype());
  ops::conv2d_backward_data(dy, weight.value, dx, params, epilogue);
  return dx;
}

ops::ConvEpilogue then_activation(float slope) {
  ops::ConvEpilogue epilogue;
  epilogue.activation = true;
  epilogue.slope = slope;
  return epilogue;
}

ops::ConvEpilogue plus(const Tensor& addend) {
  ops::ConvEpilogue epilogue;
  epilogue.addend = addend;
  return epilogue;
}

ops::ConvEpilogue through_activation(const Tensor& activated, float slope, const Tensor& addend) {
  ops::ConvEpilogue epilogue = then_activation(slope);
  epilogue.activation_output = activated;
  epilogue.addend = addend;
  return epilogue;
}

void ConvLayer::backward_weight(const Tensor& x, const Tensor& dy) {
  ProfileRange range(backward_weight_range.c_str());
  ops::conv2d_backward_weight(x, dy, weight.grad, bias.grad, params);
}

ConvLayer make_conv_layer(Device& device, const std::string& name, int in_channels,
                          int out_channels, int kernel, int stride, int padding, DType dtype,
                          float gain, std::mt19937& rng) {
  const float fan_in = static_cast<float>(in_channels * kernel * kernel);
  ConvLayer layer;
  layer.params = ops::Conv2dParams{stride, padding};
  const std::string shape = "conv " + std::to_string(in_channels) + "->" + std::to_string(out_channels) + " " +
                            std::to_string(kernel) + "x" + std::to_string(kernel) +
                            (stride != 1 ? " s" + std::to_string(stride) : std::string());
  layer.forward_range = shape + " fwd";
  layer.backward_data_range = shape + " bwd-data";
  layer.backward_weight_range = shape + " bwd-weight";
  layer.weight = make_parameter(device, name + ".weight", {out_channels, kernel, kernel, in_channels},
                                dtype, gain * std::sqrt(6.0f / fan_in), rng);
  layer.bias = make_parameter(device, name + ".bias", {out_channels}, dtype,
                              1.0f / std::sqrt(fan_in), rng);
  return layer;
}

}  // namespace oomlab::srgan
