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
#include <vector>

#include "kernels/core/tensor.hpp"
#include "scenarios/models/transformer/activation_tensors.hpp"
#include "scenarios/models/transformer/parameter_tensors.hpp"
#include "scenarios/models/transformer/transformer_config.hpp"

namespace oomlab::model {

using LogFn = std::function<void(const std::string&)>;

class Transformer {
 public:
  // Allocates the parameters (compute dtype, Tag::weights) and gradients (Tag::grads) and
  // initialises the parameters from `seed` (nothing is written on dry). Logs the sizes.
  Transformer(Device& device, TransformerConfig config, TrainOptions options, std::uint32_t seed,
              const LogFn& log = {});

  Device& device() const { return device_; }
  const TransformerConfig& config() const { return config_; }
  const TrainOptions& options() const { return options_; }
  DType dtype() const { return compute_dtype(options_.precision); }

  ParameterTensors& params() { return params_; }  // what the forward reads
  ParameterTensors& grads() { return grads_; }    // f32, or the compute dtype for matmul weights
  std::vector<Tensor> parameter_tensors();        // defined tensors in table order
  std::vector<Tensor> gradient_tensors();

  // Forward over one micro-batch: tokens and targets (B, T) i32 with T <= maxT. The fused
  // cross-entropy writes per-token losses; with `dloss` set (dL/dloss_row: 1/N for a mean, times
  // the loss scale) it also turns the logits into dlogits in place, ready for backward().
  void forward(const Tensor& tokens, const Tensor& targets, std::optional<float> dloss);
  // Mean of the last forward's losses (blocking read; NaN on dry).
  float mean_loss() const;
  // Logits of the last forward run without dloss (B, T, V).
  const Tensor& logits() const { return logits_; }

  // Backward of the last forward (which must have had dloss): ACCUMULATES every parameter
  // gradient (+=, so micro-batches add up) and frees every activation.
  void backward();
  void zero_grads();
  // Drops the activations of a forward that will not be followed by backward.
  void release_activations();

  // Bytes of the parameters as allocated here (compute dtype) and of their gradients.
  std::size_t parameter_bytes() const;
  std::size_t gradient_bytes() const;

 private:
  BlockActivations block_forward(std::int64_t layer, const Tensor& x, Tensor& out) const;
  Tensor block_backward(std::int64_t layer, const Tensor& x, const BlockActivations& kept,
                        const Tensor& d_out);
  void norm_forward(Tensor& out, Tensor& mean, Tensor& rstd, const Tensor& x, const Tensor& weight,
                    const Tensor& bias) const;
  void norm_backward(Tensor& dx, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                     const Tensor& x, const Tensor& weight, const Tensor& mean,
                     const Tensor& rstd) const;
  void lm_head_backward(Tensor& d_lnf);

  Device& device_;
  TransformerConfig config_;
  TrainOptions options_;
  ParameterTensors params_;
  ParameterTensors grads_;

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

// One line per memory component for a (B, T) run: parameters, gradients, optimizer,
// activations per block and in total (plain or checkpointed), as llm.c logs at start.
std::string describe_memory_plan(const TransformerConfig& config, const TrainOptions& options,
                                 std::int64_t batch, std::int64_t seq);

}  // namespace oomlab::model
