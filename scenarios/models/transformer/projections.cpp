#include "scenarios/models/transformer/projections.hpp"

#include <cmath>

#include "harness/memory/tags.hpp"
#include "kernels/transformer/init_normal.hpp"
#include "kernels/transformer/matmul.hpp"
#include "kernels/transformer/quantize.hpp"
#include "kernels/transformer/quantize_nf4.hpp"

namespace oomlab::model {
namespace {

using memory::Tag;
using memory::TagScope;

const ops::MatmulOptions kLinear{false, true, false, false};            // y = x W^T
const ops::MatmulOptions kLinearAccumulate{false, true, true, false};   // y += x W^T
const ops::MatmulOptions kAccumulate{false, false, true, false};        // y += x W

constexpr Projection kAll[] = {Projection::qkv, Projection::attn_out, Projection::mlp_in,
                               Projection::mlp_up, Projection::mlp_down};

std::size_t index_of(Projection which) { return static_cast<std::size_t>(which); }

bool targeted(Projection which, LoraTargets targets) {
  const bool attention = which == Projection::qkv || which == Projection::attn_out;
  switch (targets) {
    case LoraTargets::all: return true;
    case LoraTargets::attention: return attention;
    case LoraTargets::mlp: return !attention;
  }
  return false;
}

// The spec of a projection's stacked weight, or null (mlp_up in GPT-2).
const ParameterSpec* spec_of(const std::vector<ParameterSpec>& specs, Projection which) {
  for (const ParameterSpec& spec : specs) {
    if (spec.member == projection_member(which)) return &spec;
  }
  return nullptr;
}

}  // namespace

Tensor ParameterTensors::*projection_member(Projection which) {
  switch (which) {
    case Projection::qkv: return &ParameterTensors::qkv_w;
    case Projection::attn_out: return &ParameterTensors::attn_proj_w;
    case Projection::mlp_in: return &ParameterTensors::fc_w;
    case Projection::mlp_up: return &ParameterTensors::up_w;
    case Projection::mlp_down: return &ParameterTensors::proj_w;
  }
  return nullptr;
}

std::optional<Projection> projection_of(const ParameterSpec& spec) {
  for (Projection which : kAll) {
    if (spec.member == projection_member(which)) return which;
  }
  return std::nullopt;
}

bool stored_int8(const ParameterSpec& spec, const TrainOptions& options) {
  return options.lora.int8_base && projection_of(spec).has_value();
}

bool stored_nf4(const ParameterSpec& spec, const TrainOptions& options) {
  return options.lora.nf4_base && projection_of(spec).has_value();
}

Shape stored_shape(const ParameterSpec& spec, const TrainOptions& options) {
  if (!stored_nf4(spec, options)) return spec.shape;
  return {spec.shape[0], spec.shape[1], (spec.shape[2] + 1) / 2};
}

std::size_t adapter_elements(const TransformerConfig& config, const TrainOptions& options) {
  if (!options.lora.enabled()) return 0;
  std::size_t elements = 0;
  const auto r = static_cast<std::size_t>(options.lora.rank);
  const std::vector<ParameterSpec> specs = parameter_specs(config);
  for (Projection which : kAll) {
    const ParameterSpec* spec = spec_of(specs, which);
    if (spec == nullptr || !targeted(which, options.lora.targets)) continue;
    elements +=
        static_cast<std::size_t>(spec->shape[0]) * r * static_cast<std::size_t>(spec->shape[1] + spec->shape[2]);
  }
  return elements;
}

std::size_t int8_scale_bytes(const TransformerConfig& config, const TrainOptions& options) {
  std::size_t bytes = 0;
  for (const ParameterSpec& spec : parameter_specs(config)) {
    if (stored_int8(spec, options)) bytes += static_cast<std::size_t>(spec.shape[0] * spec.shape[1]) * sizeof(float);
  }
  return bytes;
}

std::size_t nf4_scale_bytes(const TransformerConfig& config, const TrainOptions& options) {
  std::size_t bytes = 0;
  for (const ParameterSpec& spec : parameter_specs(config)) {
    if (!stored_nf4(spec, options)) continue;
    const ops::Nf4Shapes layer = ops::nf4_shapes(spec.shape[1] * spec.shape[2]);
    bytes +=
        static_cast<std::size_t>(spec.shape[0] * (shape_numel(layer.absmax_q) + shape_numel(layer.absmax_scale) * 4));
  }
  return bytes;
}

Projections::Projections(Device& device, const TransformerConfig& config, const TrainOptions& options,
                         std::uint64_t seed)
    : device_(device), dtype_(compute_dtype(options.precision)) {
  const std::vector<ParameterSpec> specs = parameter_specs(config);
  for (Projection which : kAll) {
    const ParameterSpec* spec = spec_of(specs, which);
    if (spec == nullptr) continue;
    const std::int64_t L = spec->shape[0], out = spec->shape[1], in = spec->shape[2];
    in_features_[index_of(which)] = in;
    if (stored_int8(*spec, options)) {
      TagScope tag(Tag::weights);
      scales_[index_of(which)] = Tensor::empty(device, {L, out}, DType::f32);
    }
    if (stored_nf4(*spec, options)) {
      TagScope tag(Tag::weights);
      const ops::Nf4Shapes layer = ops::nf4_shapes(out * in);
      nf4_[index_of(which)].absmax = Tensor::empty(device, {L, shape_numel(layer.absmax_q)}, DType::i8);
      nf4_[index_of(which)].absmax_scale = Tensor::empty(device, {L, shape_numel(layer.absmax_scale)}, DType::f32);
    }
    if (!options.lora.enabled() || !targeted(which, options.lora.targets)) continue;
    const std::int64_t r = options.lora.rank;
    Adapter& adapter = adapters_[index_of(which)];
    {
      TagScope tag(Tag::weights);
      adapter.a = Tensor::empty(device, {L, r, in}, dtype_);
      adapter.b = Tensor::zeros(device, {L, out, r}, dtype_);
    }
    {
      TagScope tag(Tag::grads);
      adapter.da = Tensor::zeros(device, {L, r, in}, dtype_);
      adapter.db = Tensor::zeros(device, {L, out, r}, dtype_);
    }
    // PEFT's kaiming_uniform(a=sqrt(5)) has variance 1 / (3 in); a normal of the same variance.
    ops::fill_normal(adapter.a, seed + index_of(which), 1.0f / std::sqrt(3.0f * static_cast<float>(in)));
  }
}

Tensor Projections::weight(Projection which, std::int64_t layer, const ParameterTensors& params) const {
  const Tensor base = layer_of(params.*projection_member(which), layer);
  const Tensor& scales = scales_[index_of(which)];
  const Nf4Scales& nf4 = nf4_[index_of(which)];
  if (nf4.absmax.defined()) {
    Shape shape = base.shape();
    shape.back() = in_features_[index_of(which)];
    Tensor dequantised = Tensor::empty(device_, shape, dtype_, Tag::workspace);
    ops::dequantize_nf4(dequantised, base, layer_of(nf4.absmax, layer), layer_of(nf4.absmax_scale, layer));
    return dequantised;
  }
  if (!scales.defined()) return base;
  Tensor dequantised = Tensor::empty(device_, base.shape(), dtype_, Tag::workspace);
  ops::dequantize_int8_rowwise(dequantised, base, this->scales(which, layer));
  return dequantised;
}

void Projections::quantize_nf4(Projection which, std::int64_t layer, Tensor& codes, const Tensor& values) const {
  const Nf4Scales& nf4 = nf4_[index_of(which)];
  Tensor absmax = layer_of(nf4.absmax, layer), absmax_scale = layer_of(nf4.absmax_scale, layer);
  ops::quantize_nf4(codes, absmax, absmax_scale, values);
}

void Projections::forward(Projection which, std::int64_t layer, Tensor& y, const Tensor& x,
                          const Tensor& w, const Tensor& bias, const Tensor& residual) const {
  ops::matmul(y, x, w, bias, kLinear, residual);
  const Adapter& adapter = adapters_[index_of(which)];
  if (!adapter.a.defined()) return;
  const Tensor a = layer_of(adapter.a, layer), b = layer_of(adapter.b, layer);
  Shape inner = x.shape();
  inner.back() = a.dim(0);
  Tensor u = Tensor::empty(device_, inner, x.dtype());
  ops::matmul(u, x, a, Tensor(), kLinear);
  ops::matmul(y, u, b, Tensor(), kLinearAccumulate);
}

void Projections::backward(Projection which, std::int64_t layer, Tensor& dx, Tensor& dw, Tensor& dbias,
                           const Tensor& dy, const Tensor& x, const Tensor& w) const {
  ops::matmul_backward(dx, dw, dbias, dy, x, w, kLinear);
  const Adapter& adapter = adapters_[index_of(which)];
  if (!adapter.a.defined()) return;
  const Tensor a = layer_of(adapter.a, layer), b = layer_of(adapter.b, layer);
  Tensor da = layer_of(adapter.da, layer), db = layer_of(adapter.db, layer);
  Shape inner = x.shape();
  inner.back() = a.dim(0);
  Tensor u = Tensor::empty(device_, inner, x.dtype());  // recomputed: x A^T
  ops::matmul(u, x, a, Tensor(), kLinear);
  Tensor du = Tensor::empty(device_, inner, x.dtype());
  Tensor none;
  ops::matmul_backward(du, db, none, dy, u, b, kLinear);  // du = dy B, dB += dy^T u
  u.reset();
  ops::matmul(dx, du, a, Tensor(), kAccumulate);           // dx += du A
  ops::matmul_backward(none, da, none, du, x, a, kLinear);  // dA += du^T x
}

Tensor Projections::scales(Projection which, std::int64_t layer) const {
  return layer_of(scales_[index_of(which)], layer);
}

bool Projections::adapted(Projection which) const { return adapters_[index_of(which)].a.defined(); }

std::vector<Tensor> Projections::adapter_tensors() const {
  return collect(&Adapter::a, &Adapter::b);
}

std::vector<Tensor> Projections::adapter_gradients() const {
  return collect(&Adapter::da, &Adapter::db);
}

std::vector<Tensor> Projections::collect(Tensor Adapter::*first, Tensor Adapter::*second) const {
  std::vector<Tensor> list;
  for (const Adapter& adapter : adapters_) {
    if (!adapter.a.defined()) continue;
    list.push_back(adapter.*first);
    list.push_back(adapter.*second);
  }
  return list;
}

}  // namespace oomlab::model
