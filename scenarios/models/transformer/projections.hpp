// The block's linear projections as forward and backward use them. A full fine-tune multiplies
// by the plain weight and accumulates its gradient. With LoRA the base is frozen and a targeted
// projection adds a trainable low-rank adapter: y = x W^T + (x A^T) B^T with A (r, in) random and
// B (out, r) zero, so training starts from the base model (scale alpha / r = 1, PEFT's default
// ratio). The adapter's inner product u = x A^T (N, r) is not kept: backward recomputes it, at
// 2·N·in·r flops against the base's 2·N·in·out. With an int8 base (QLoRA's idea, with LLM.int8()'s
// per-row absmax storage) every use dequantises the layer's rows into a temporary of the compute
// dtype (Tag::workspace), freed right after its matmul: the card holds 1 byte per base weight
// plus one layer's projection at a time. An nf4 base (QLoRA's, kernels/transformer/quantize_nf4.hpp)
// does the same from half a byte per weight plus its double-quantised block scales.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/core/tensor.hpp"
#include "scenarios/models/transformer/parameter_tensors.hpp"
#include "scenarios/models/transformer/transformer_config.hpp"

namespace oomlab::model {

enum class Projection { qkv, attn_out, mlp_in, mlp_up, mlp_down };  // mlp_in: gpt2 fc, llama gate
constexpr std::size_t kProjections = 5;

// The stacked (L, out, in) weight of a projection in the parameter table (mlp_up: llama only).
Tensor ParameterTensors::*projection_member(Projection which);
// The projection whose weight `spec` is, if any.
std::optional<Projection> projection_of(const ParameterSpec& spec);
// True when `spec` is a block projection stored as int8 (nf4) under these options.
bool stored_int8(const ParameterSpec& spec, const TrainOptions& options);
bool stored_nf4(const ParameterSpec& spec, const TrainOptions& options);
// The shape a parameter is allocated in: the spec's, or for an nf4 projection (L, out, in / 2)
// bytes of two 4-bit codes each.
Shape stored_shape(const ParameterSpec& spec, const TrainOptions& options);

// Elements of the LoRA adapters (A and B of every targeted projection) and bytes of the int8
// base's row scales that these options add to a model.
std::size_t adapter_elements(const TransformerConfig& config, const TrainOptions& options);
std::size_t int8_scale_bytes(const TransformerConfig& config, const TrainOptions& options);
// The nf4 base's absmax bytes and f32 scales (an absmax byte per 64 weights, an f32 per 256 of
// those and the offset: QLoRA's 0.127 bits per weight of constants).
std::size_t nf4_scale_bytes(const TransformerConfig& config, const TrainOptions& options);

class Projections {
 public:
  // Allocates the adapters (Tag::weights), their gradients (Tag::grads) and the int8 base's
  // row scales (Tag::weights), as the options ask; A drawn from `seed`, B zero.
  Projections(Device& device, const TransformerConfig& config, const TrainOptions& options,
              std::uint64_t seed);

  // The base weight of `which` at a layer, ready to multiply: a slice of `params`, or its int8
  // rows (nf4 blocks) dequantised into a temporary that lives as long as the returned tensor.
  Tensor weight(Projection which, std::int64_t layer, const ParameterTensors& params) const;
  // y = x W^T (+ bias) (+ residual) (+ (x A^T) B^T); residual: y's shape, or undefined.
  void forward(Projection which, std::int64_t layer, Tensor& y, const Tensor& x, const Tensor& w,
               const Tensor& bias, const Tensor& residual = Tensor()) const;
  // dx = dy W (+ (dy B) A), overwritten; dw and dbias += when defined (a trainable base); the
  // adapter's dA and dB +=.
  void backward(Projection which, std::int64_t layer, Tensor& dx, Tensor& dw, Tensor& dbias,
                const Tensor& dy, const Tensor& x, const Tensor& w) const;

  // The int8 base's row scales of a stacked weight, layer `layer`: (out) f32.
  Tensor scales(Projection which, std::int64_t layer) const;
  // Quantises one layer of a projection's f32 weight `values` (out, in) into `codes` (its packed
  // (out, in / 2) slice) and this layer's nf4 scales.
  void quantize_nf4(Projection which, std::int64_t layer, Tensor& codes, const Tensor& values) const;

  bool adapted(Projection which) const;
  std::vector<Tensor> adapter_tensors() const;    // A and B of each adapted projection
  std::vector<Tensor> adapter_gradients() const;  // in the same order

 private:
  struct Adapter {
    Tensor a, b;    // (L, r, in), (L, out, r): compute dtype
    Tensor da, db;  // their gradients, same shapes and dtype
  };
  // Two members of every adapter that exists, in projection order.
  std::vector<Tensor> collect(Tensor Adapter::*first, Tensor Adapter::*second) const;

  Device& device_;
  DType dtype_;  // the compute dtype: adapters and dequantised weights
  std::array<Adapter, kProjections> adapters_;
  std::array<Tensor, kProjections> scales_;  // int8 base: (L, out) f32
  struct Nf4Scales {
    Tensor absmax;        // (L, out * in / 64) i8: each block's absmax, quantised to a byte
    Tensor absmax_scale;  // (L, out * in / 16384 rounded up, + 1) f32: their scales, then the offset
  };
  std::array<Nf4Scales, kProjections> nf4_;
  std::array<std::int64_t, kProjections> in_features_{};  // a packed nf4 weight's unpacked width
};

}  // namespace oomlab::model
