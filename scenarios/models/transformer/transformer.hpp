// A GPT-2 / LLaMA-style transformer with an explicit forward and backward, in the manner of
// llm.c's train_gpt2.cu: no autograd, so which activations are kept (BlockActivations), freed
// (the temporaries in block_forward/block_backward) or recomputed (checkpointing, the GELU and
// SwiGLU outputs) can be read in transformer.cpp. Every allocation goes through the device's
// allocator under a tag: weights (the parameters the forward reads), grads, activations; the
// ops add workspace. The optimizer lives in trainer.hpp.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/tensor.hpp"
#include "scenarios/models/transformer/activation_tensors.hpp"
#include "scenarios/models/transformer/parameter_tensors.hpp"
#include "scenarios/models/transformer/projections.hpp"
#include "scenarios/models/transformer/sharding.hpp"
#include "scenarios/models/transformer/transformer_config.hpp"

namespace oomlab::model {

using LogFn = std::function<void(const std::string&)>;

class Transformer {
 public:
  // Allocates the parameters (compute dtype, Tag::weights; int8 or nf4 block projections with
  // options.lora.int8_base or nf4_base; with LoRA the adapters and their gradients) and initialises them from
  // `seed` (nothing is written on dry). Logs the sizes. The base's gradients are allocated by
  // backward (see zero_grads).
  // Sharded (options.shard_ranks > 0): `group` says which rank this model is (its rows of every
  // piece; the seed's values for those rows) and where the collectives meet.
  Transformer(Device& device, TransformerConfig config, TrainOptions options, std::uint32_t seed,
              const LogFn& log = {}, ShardGroup group = {});

  Device& device() const { return device_; }
  const TransformerConfig& config() const { return config_; }
  const TrainOptions& options() const { return options_; }
  DType dtype() const { return compute_dtype(options_.precision); }

  ParameterTensors& params() { return params_; }  // what the forward reads
  // A parameter's gradient (layer < 0: an unstacked tensor; else one layer of a stacked one), as
  // backward left it: undefined before backward wrote it, after zero_grads, and for a frozen base.
  // Its dtype: gradient_dtype (parameter_tensors.hpp).
  Tensor gradient(Tensor ParameterTensors::*member, std::int64_t layer) const;
  const Projections& projections() const { return projections_; }
  // What the optimizer updates and their gradients, in the same order: every parameter in table
  // order, a stacked one layer by layer (slices sharing its storage), or with LoRA the adapters' A
  // and B. A gradient backward has not written is undefined: the optimizer skips its parameter.
  std::vector<Tensor> trainable_tensors();
  std::vector<Tensor> trainable_gradients();

  // Forward over one micro-batch: tokens and targets (B, T) i32 with T <= maxT. The fused
  // cross-entropy writes per-token losses; with `dloss` set (dL/dloss_row: 1/N for a mean, times
  // the loss scale) it also turns the logits into dlogits in place, ready for backward().
  void forward(const Tensor& tokens, const Tensor& targets, std::optional<float> dloss);
  // Mean of the last forward's losses (blocking read; NaN on dry).
  float mean_loss() const;
  // Logits of the last forward run without dloss (B, T, V).
  const Tensor& logits() const { return logits_; }

  // Backward of the last forward (which must have had dloss): ACCUMULATES every parameter
  // gradient (+=, so micro-batches add up) and frees every activation. A base gradient is
  // allocated (zeroed, Tag::grads) where backward first writes it, a layer at a time, so the
  // early layers' gradients do not exist while the late layers' activations do.
  void backward();
  // Frees the base's gradients, as PyTorch's zero_grad(set_to_none=True): between steps (and
  // during the forward) they take no memory. LoRA adapters' gradients are zeroed in place.
  void zero_grads();
  // Drops the activations of a forward that will not be followed by backward.
  void release_activations();

  // Bytes of the parameters as allocated here (compute dtype, int8 rows and their scales, LoRA
  // adapters) and of their gradients once backward has written all of them.
  std::size_t parameter_bytes() const;
  std::size_t gradient_bytes() const;
  std::size_t trainable_elements() const;
  bool frozen_base() const { return options_.lora.enabled(); }
  // Sharded: the gradient norm over every rank's shards (each rank's norm of its own in, the
  // global one out); nothing otherwise.
  void all_reduce_grad_norm(Tensor& norm) const { all_reduce_norm(norm, group_); }

 private:
  BlockActivations block_forward(std::int64_t layer, const Tensor& x, Tensor& out) const;
  // Frees each of `kept`'s tensors after its last use.
  Tensor block_backward(std::int64_t layer, const Tensor& x, BlockActivations& kept,
                        const Tensor& d_out);
  void norm_forward(Tensor& out, Tensor& mean, Tensor& rstd, const Tensor& x, const Tensor& weight,
                    const Tensor& bias) const;
  // dx = the norm's input gradient + skip (the gradient arriving through the residual branch,
  // added as dx is written; undefined for none).
  void norm_backward(Tensor& dx, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                     const Tensor& x, const Tensor& weight, const Tensor& mean,
                     const Tensor& rstd, const Tensor& skip = Tensor()) const;
  void lm_head_backward(Tensor& d_lnf);
  // The gradient backward writes for a parameter (layer < 0: unstacked), allocated zeroed on first
  // use; undefined for a frozen base or a tensor this style has not.
  Tensor gradient_for_write(Tensor ParameterTensors::*member, std::int64_t layer);
  // Where a parameter's gradient lives (const or not, as `self`).
  template <class Self>
  static auto& gradient_slot(Self& self, Tensor ParameterTensors::*member, std::int64_t layer);
  // The order the optimizer sees: every spec in table order, a stacked one layer by layer
  // (layer -1: an unstacked tensor).
  std::vector<std::pair<const ParameterSpec*, std::int64_t>> trainable_pieces() const;
  // Sharding (options.shard_ranks > 0, sharding.hpp): where a layer's weights are read from (the
  // stacked params_ at `index` = the layer; or, sharded, the gathered layer at index 0).
  struct LayerWeights {
    const ParameterTensors* tensors;
    std::int64_t index;
  };
  bool sharded() const { return options_.shard_ranks > 0; }
  LayerWeights layer_weights(std::int64_t layer) const;
  // What a block's forward and backward both read, under the short names they use: the
  // activation shapes, the compute and attention dtypes, the style, the device, and where layer
  // l's weights are (p at index pl: l, or 0 for a gathered layer).
  struct BlockSetup {
    const ActivationShapes& s;
    DType cd, ad;
    bool gpt2;
    Device& dev;
    const ParameterTensors& p;
    std::int64_t pl;
  };
  BlockSetup block_setup(std::int64_t l) const;
  // The table's entry for a member, or nullptr for a tensor this style has not (LLaMA's biases).
  const ParameterSpec* spec_of(Tensor ParameterTensors::*member) const;
  Tensor& shard_of(const ParameterSpec& spec, std::int64_t layer);
  Tensor& shard_gradient_of(const ParameterSpec& spec, std::int64_t layer);
  // A layer's pieces, whole, into gathered_layer_; layer < 0: the embeddings, final norm and head
  // into params_.
  void gather(std::int64_t layer);
  void scatter_gradients(std::int64_t layer);   // layer < 0: the unstacked ones; frees the full ones
  // y = x W^T (+ b) (+ adapter) for a block projection, and its backward (projections.hpp).
  // y = x W^T + bias (+ residual, added by the GEMM's epilogue).
  void linear(Projection which, std::int64_t layer, Tensor& y, const Tensor& x, const Tensor& bias,
              const Tensor& residual = Tensor()) const;
  void linear_backward(Projection which, std::int64_t layer, Tensor& dx, Tensor& dbias, const Tensor& dy,
                       const Tensor& x);
  // A norm weight's (or bias's) gradient at a layer, or a sink when the base is frozen: the norm
  // kernels always write one, and nothing reads it.
  // layer < 0: an unstacked tensor (the final norm); slot: 0 weight, 1 bias.
  Tensor norm_grad(Tensor ParameterTensors::*member, std::int64_t layer, int slot);
  float rope_base() const { return static_cast<float>(config_.rope_theta); }

  Device& device_;
  TransformerConfig config_;
  TrainOptions options_;
  std::vector<ParameterSpec> specs_;  // parameter_specs(config_)
  ParameterTensors params_;
  ParameterTensors grads_;                     // the unstacked tensors' (embeddings, final norm, head)
  std::vector<ParameterTensors> layer_grads_;  // per layer: the stacked tensors', without the L
  Projections projections_;
  Tensor norm_grad_sink_;  // frozen base: (C) f32
  // Sharded: this rank's rows of each piece and of its gradient (unstacked, and per layer), and
  // the one layer gathered whole (its tensors shaped (1, ...), as a stacked tensor of one layer).
  ShardGroup group_;
  ParameterTensors shards_, shard_grads_;
  std::vector<ParameterTensors> layer_shards_, layer_shard_grads_;
  ParameterTensors gathered_layer_;

  // State of the last forward. residual_[l] is block l's input (residual_[L] the last output):
  // kept in every mode, as checkpointing restarts each block from it.
  ActivationShapes shapes_;
  Tensor tokens_;
  std::vector<Tensor> residual_;
  std::vector<BlockActivations> blocks_;  // empty when checkpointing
  Tensor lnf_, lnf_mean_, lnf_rstd_;      // (B, T, C), (B*T), (B*T)
  Tensor logits_;                         // (B, T, padded V): dlogits after a forward with dloss
  Tensor losses_;                         // (B*T) f32
  bool has_dlogits_ = false;
};

// Bytes a model with these options allocates for its parameters (int8 rows and scales, adapters
// included) and their gradients (the adapters' only, with LoRA), and the elements the optimizer
// updates (each with its master weight and moments).
std::size_t parameter_bytes(const TransformerConfig& config, const TrainOptions& options);
std::size_t gradient_bytes(const TransformerConfig& config, const TrainOptions& options);
std::size_t trainable_elements(const TransformerConfig& config, const TrainOptions& options);

// One line per memory component for a (B, T) run: parameters, gradients, optimizer,
// activations per block and in total (plain or checkpointed), as llm.c logs at start.
std::string describe_memory_plan(const TransformerConfig& config, const TrainOptions& options,
                                 std::int64_t batch, std::int64_t seq);

}  // namespace oomlab::model
