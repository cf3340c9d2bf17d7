// The transformer's forward and backward, block by block. Read top to bottom: each tensor is
// allocated where it is first written and reset where it is last read, so the allocator trace
// follows this file line by line on every device.
#include "scenarios/models/transformer/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

#include "harness/memory/size.hpp"
#include "harness/memory/tags.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/core/check.hpp"
#include "kernels/transformer/cast.hpp"
#include "harness/device/op_profiler.hpp"
#include "harness/memory/site.hpp"
#include "kernels/transformer/cross_entropy.hpp"
#include "kernels/transformer/embedding.hpp"
#include "kernels/transformer/gelu.hpp"
#include "kernels/transformer/init_normal.hpp"
#include "kernels/transformer/layernorm.hpp"
#include "kernels/transformer/matmul.hpp"
#include "kernels/transformer/quantize.hpp"
#include "kernels/core/residual.hpp"
#include "kernels/transformer/rmsnorm.hpp"
#include "kernels/transformer/rope.hpp"
#include "kernels/transformer/swiglu.hpp"
#include "scenarios/models/transformer/head_layout.hpp"

namespace oomlab::model {
namespace {

using memory::Tag;
using memory::TagScope;

const ops::MatmulOptions kLinear{false, true, false, false};  // y = x W^T (+ b), W as (out, in)

// One parameter tensor's initial values, in f32: N(0, 0.02) (residual projections scaled by
// 1/sqrt(2L), as GPT-2 does), ones or zeros. Drawn on the tensor's device from (seed, tensor
// index, element index), so host and cuda start from the same model.
// `first_index`: the offset of `tensor` (a layer's slice) in the whole parameter.
void initialize_f32(Tensor& tensor, const ParameterSpec& spec, const TransformerConfig& config,
                    std::uint64_t seed, std::uint64_t first_index) {
  switch (spec.init) {
    case InitKind::ones: tensor.fill(1.0); return;
    case InitKind::zeros: tensor.fill(0.0); return;
    case InitKind::normal: ops::fill_normal(tensor, seed, 0.02f, first_index); return;
    case InitKind::residual_normal:
      ops::fill_normal(tensor, seed, 0.02f / std::sqrt(2.0f * static_cast<float>(config.layers)), first_index);
      return;
  }
}

}  // namespace

Transformer::Transformer(Device& device, TransformerConfig config, TrainOptions options,
                         std::uint32_t seed, const LogFn& log, ShardGroup group)
    : device_(device),
      config_(std::move(config)),
      options_(options),
      specs_(parameter_specs(config_)),
      layer_grads_(static_cast<std::size_t>(config_.layers)),
      projections_(device, config_, options_, (std::uint64_t{seed} << 32) + 1000),
      group_(group) {
  OOMLAB_CHECK(config_.heads > 0 && (config_.head_size > 0 || config_.channels % config_.heads == 0),
               config_.name << ": channels " << config_.channels << " not divisible by heads "
                            << config_.heads);
  OOMLAB_CHECK(config_.kv_head_count() > 0 && config_.heads % config_.kv_head_count() == 0,
               config_.name << ": " << config_.heads << " query heads do not form groups over "
                            << config_.kv_head_count() << " key/value heads");
  OOMLAB_CHECK(!options_.lora.quantized_base() || options_.lora.enabled(),
               "a quantised base is frozen: it needs LoRA adapters (rank > 0) to train");
  OOMLAB_CHECK(!(options_.lora.int8_base && options_.lora.nf4_base), "the base is int8 or nf4, not both");
  OOMLAB_CHECK(!sharded() || !options_.lora.enabled(),
               "sharding (shard_ranks) trains every weight: it does not combine with LoRA");
  OOMLAB_CHECK(!sharded() || !options_.offload_optimizer,
               "sharding (shard_ranks) keeps each rank's optimizer shard on its GPU: it does not combine with offload");
  const DType cd = dtype();
  if (sharded()) {  // this rank's rows of every piece; nothing whole
    TagScope tag(Tag::weights);
    layer_shards_.resize(static_cast<std::size_t>(config_.layers));
    layer_shard_grads_.resize(static_cast<std::size_t>(config_.layers));
    for (const ParameterSpec& spec : specs_) {
      const Shape shard = shard_shape(piece_shape(spec), group_.rank, options_.shard_ranks);
      OOMLAB_CHECK(shard[0] > 0, "gpus=" << options_.shard_ranks << " leaves rank " << group_.rank << " no rows of "
                                         << spec.name << " (" << piece_shape(spec)[0] << " rows): use fewer");
      if (!stacked_per_layer(spec)) shards_.*spec.member = Tensor::empty(device_, shard, cd);
      else for (ParameterTensors& layer : layer_shards_) layer.*spec.member = Tensor::empty(device_, shard, cd);
    }
  } else {
    TagScope tag(Tag::weights);
    params_ = allocate_parameters(device_, config_, [&](const ParameterSpec& spec) {
      return stored_int8(spec, options_) || stored_nf4(spec, options_) ? DType::i8 : cd;
    }, [&](const ParameterSpec& spec) { return stored_shape(spec, options_); });
  }
  if (frozen_base()) {
    TagScope tag(Tag::grads);
    norm_grad_sink_ = Tensor::empty(device_, {2, config_.channels}, DType::f32);
  }
  // Seeded init in f32, a layer's slice at a time: a bf16/f16 or int8 parameter is rounded through
  // one f32 staging tensor of a layer's size, so the init's transient stays small next to the
  // model (a 7B card with 1.5 GiB to spare still starts). An unstacked tensor past
  // kMaxStagingBytes in f32 (a 128k-vocabulary embedding: 2 GiB) is staged a run of rows at a
  // time, so the init never needs more than the training step does. Dry makes the same staging
  // allocations but writes no values.
  constexpr std::int64_t kMaxStagingBytes = std::int64_t{1} << 30;
  std::uint64_t tensor_seed = std::uint64_t{seed} << 32;
  // A shard holds its rows of the piece with the values the unsharded model has there.
  for (const ParameterSpec& spec : specs_) {
    const bool stacked = stacked_per_layer(spec);
    const std::int64_t piece_numel = shape_numel(piece_shape(spec));
    const std::int64_t piece_rows = piece_shape(spec)[0];
    const std::int64_t row_elements = piece_numel / piece_rows;
    for (std::int64_t l = 0; l < (stacked ? config_.layers : 1); ++l) {
      Tensor target = sharded() ? shard_of(spec, stacked ? l : -1)
                                : (stacked ? layer_slice(params_.*spec.member, l) : params_.*spec.member);
      const std::int64_t first_row = sharded() ? shard_rows(piece_rows, group_.rank, options_.shard_ranks).begin : 0;
      const bool quantised = stored_int8(spec, options_) || stored_nf4(spec, options_);
      const std::int64_t rows = target.dim(0);
      const std::int64_t rows_per_staging = quantised || target.numel() * 4 <= kMaxStagingBytes
                                                ? rows
                                                : std::max<std::int64_t>(1, kMaxStagingBytes / (row_elements * 4));
      for (std::int64_t begin = 0; begin < rows; begin += rows_per_staging) {
        Tensor part = rows_per_staging == rows ? target : target.slice(begin, std::min(rows, begin + rows_per_staging));
        // An nf4 target is packed (two codes a byte): its values are staged at the layer's shape.
        Tensor staging = part.dtype() == DType::f32
                             ? part
                             : Tensor::empty(device_, stored_nf4(spec, options_) ? piece_shape(spec) : part.shape(),
                                             DType::f32, Tag::workspace);
        if (!device_.is_dry()) {
          initialize_f32(staging, spec, config_, tensor_seed,
                         static_cast<std::uint64_t>(l * piece_numel + (first_row + begin) * row_elements));
        }
        if (stored_int8(spec, options_)) {
          Tensor scales = projections_.scales(*projection_of(spec), l);
          ops::quantize_int8_rowwise(part, scales, staging);
        } else if (stored_nf4(spec, options_)) {
          projections_.quantize_nf4(*projection_of(spec), l, part, staging);
        } else if (part.dtype() != DType::f32) {
          ops::cast(part, staging);
        }
      }
    }
    ++tensor_seed;
  }
  if (log) {
    std::string lora;
    if (frozen_base()) {
      lora = "; frozen base" + std::string(options_.lora.int8_base ? " (int8 projections)" : "") +
             (options_.lora.nf4_base ? " (nf4 projections)" : "") +
             ", LoRA rank " + std::to_string(options_.lora.rank) + " on " +
             lora_targets_name(options_.lora.targets) + " projections: " +
             std::to_string(trainable_elements()) + " trainable parameters";
    }
    log(config_.name + ": " + std::to_string(config_.parameter_count()) + " parameters, " +
        precision_name(options_.precision) + ", " + attention_name(options_.attention) +
        " attention" + (options_.checkpointing ? ", activation checkpointing" : "") + lora +
        "; allocated " + format_size(parameter_bytes()) + " for parameters, " +
        format_size(gradient_bytes()) + " for gradients");
  }
}

std::vector<std::pair<const ParameterSpec*, std::int64_t>> Transformer::trainable_pieces() const {
  std::vector<std::pair<const ParameterSpec*, std::int64_t>> pieces;
  for (const ParameterSpec& spec : specs_) {
    if (!stacked_per_layer(spec)) pieces.emplace_back(&spec, -1);
    else for (std::int64_t l = 0; l < config_.layers; ++l) pieces.emplace_back(&spec, l);
  }
  return pieces;
}

std::vector<Tensor> Transformer::trainable_tensors() {
  if (frozen_base()) return projections_.adapter_tensors();
  std::vector<Tensor> list;
  for (const auto& [spec, l] : trainable_pieces()) {
    if (sharded()) list.push_back(shard_of(*spec, l));
    else list.push_back(l < 0 ? params_.*spec->member : layer_slice(params_.*spec->member, l));
  }
  return list;
}

std::vector<Tensor> Transformer::trainable_gradients() {
  if (frozen_base()) return projections_.adapter_gradients();
  std::vector<Tensor> list;
  for (const auto& [spec, l] : trainable_pieces()) {
    list.push_back(sharded() ? shard_gradient_of(*spec, l) : gradient(spec->member, l));
  }
  return list;
}

template <class Self>
auto& Transformer::gradient_slot(Self& self, Tensor ParameterTensors::*member, std::int64_t layer) {
  return layer < 0 ? self.grads_.*member : self.layer_grads_.at(static_cast<std::size_t>(layer)).*member;
}

Tensor Transformer::gradient(Tensor ParameterTensors::*member, std::int64_t layer) const {
  return gradient_slot(*this, member, layer);
}

Tensor Transformer::gradient_for_write(Tensor ParameterTensors::*member, std::int64_t layer) {
  const ParameterSpec* spec = spec_of(member);
  if (frozen_base() || spec == nullptr) return Tensor();
  Tensor& grad = gradient_slot(*this, member, layer);
  if (!grad.defined()) {
    TagScope tag(Tag::grads);
    grad = Tensor::zeros(device_, piece_shape(*spec), gradient_dtype(*spec, options_.precision));
  }
  return grad;
}

const ParameterSpec* Transformer::spec_of(Tensor ParameterTensors::*member) const {
  const auto found =
      std::find_if(specs_.begin(), specs_.end(), [&](const ParameterSpec& s) { return s.member == member; });
  return found == specs_.end() ? nullptr : &*found;
}

Tensor& Transformer::shard_of(const ParameterSpec& spec, std::int64_t layer) {
  return layer < 0 ? shards_.*spec.member : layer_shards_.at(static_cast<std::size_t>(layer)).*spec.member;
}

Tensor& Transformer::shard_gradient_of(const ParameterSpec& spec, std::int64_t layer) {
  return layer < 0 ? shard_grads_.*spec.member : layer_shard_grads_.at(static_cast<std::size_t>(layer)).*spec.member;
}

Transformer::LayerWeights Transformer::layer_weights(std::int64_t layer) const {
  return sharded() ? LayerWeights{&gathered_layer_, 0} : LayerWeights{&params_, layer};
}

Transformer::BlockSetup Transformer::block_setup(std::int64_t l) const {
  const LayerWeights weights = layer_weights(l);
  return {shapes_, dtype(), attention_dtype(options_.attention), config_.is_gpt2(), device_, *weights.tensors,
          weights.index};
}

void Transformer::gather(std::int64_t layer) {
  if (!sharded()) return;
  ProfileRange range("all_gather");  // --profile: the collectives' share of the step
  TagScope tag(Tag::weights);
  for (const ParameterSpec& spec : specs_) {
    if (stacked_per_layer(spec) != (layer >= 0)) continue;
    Shape whole = spec.shape;  // a layer's: (1, piece...), as a stacked tensor of one layer
    if (layer >= 0) whole[0] = 1;
    Tensor& full = (layer >= 0 ? gathered_layer_ : params_).*spec.member;
    full = Tensor::empty(device_, whole, dtype());
    Tensor into = layer >= 0 ? layer_slice(full, 0) : full;
    all_gather(into, shard_of(spec, layer), group_);
  }
}

void Transformer::scatter_gradients(std::int64_t layer) {
  if (!sharded() || frozen_base()) return;
  ProfileRange range("reduce_scatter");
  TagScope tag(Tag::grads);  // the shard's gradient and what the reduce-scatter delivers into it
  for (const ParameterSpec& spec : specs_) {
    if (stacked_per_layer(spec) != (layer >= 0)) continue;
    Tensor& full = gradient_slot(*this, spec.member, layer);
    if (!full.defined()) continue;
    Tensor& shard = shard_gradient_of(spec, layer);
    if (!shard.defined()) {
      shard = Tensor::zeros(device_, shard_shape(piece_shape(spec), group_.rank, options_.shard_ranks), full.dtype());
    }
    reduce_scatter_mean_add(shard, full, group_);
    full.reset();
  }
}

std::size_t Transformer::parameter_bytes() const { return model::parameter_bytes(config_, options_); }
std::size_t Transformer::gradient_bytes() const { return model::gradient_bytes(config_, options_); }
std::size_t Transformer::trainable_elements() const { return model::trainable_elements(config_, options_); }

void Transformer::zero_grads() {
  if (frozen_base()) {
    for (Tensor& grad : trainable_gradients()) grad.zero();
    return;
  }
  grads_ = ParameterTensors();
  for (ParameterTensors& layer : layer_grads_) layer = ParameterTensors();
  shard_grads_ = ParameterTensors();
  for (ParameterTensors& layer : layer_shard_grads_) layer = ParameterTensors();
}

Tensor Transformer::norm_grad(Tensor ParameterTensors::*member, std::int64_t layer, int slot) {
  if (spec_of(member) == nullptr) return Tensor();  // a bias the model has not (LLaMA)
  if (frozen_base()) return layer_slice(norm_grad_sink_, slot);
  return gradient_for_write(member, layer);
}

void Transformer::linear(Projection which, std::int64_t layer, Tensor& y, const Tensor& x,
                         const Tensor& bias, const Tensor& residual) const {
  const LayerWeights weights = layer_weights(layer);
  const Tensor w = projections_.weight(which, weights.index, *weights.tensors);
  projections_.forward(which, layer, y, x, w, bias, residual);
}

void Transformer::linear_backward(Projection which, std::int64_t layer, Tensor& dx, Tensor& dbias,
                                  const Tensor& dy, const Tensor& x) {
  const LayerWeights weights = layer_weights(layer);
  const Tensor w = projections_.weight(which, weights.index, *weights.tensors);
  Tensor dw = gradient_for_write(projection_member(which), layer);
  projections_.backward(which, layer, dx, dw, dbias, dy, x, w);
}

void Transformer::norm_forward(Tensor& out, Tensor& mean, Tensor& rstd, const Tensor& x,
                               const Tensor& weight, const Tensor& bias) const {
  if (config_.is_gpt2()) {
    ops::layernorm_forward(out, mean, rstd, x, weight, bias);
  } else {
    ops::rmsnorm_forward(out, rstd, x, weight);
  }
}

void Transformer::norm_backward(Tensor& dx, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                                const Tensor& x, const Tensor& weight, const Tensor& mean,
                                const Tensor& rstd, const Tensor& skip) const {
  if (config_.is_gpt2()) {
    ops::layernorm_backward(dx, dweight, dbias, dout, x, weight, mean, rstd, skip);
  } else {
    ops::rmsnorm_backward(dx, dweight, dout, x, weight, rstd, skip);
  }
}

// ---------------------------------------------------------------------------------------------
// Forward

BlockActivations Transformer::block_forward(std::int64_t l, const Tensor& x, Tensor& out) const {
  const auto [s, cd, ad, gpt2, dev, p, pl] = block_setup(l);
  BlockActivations a;
  ProfilePhases phase("fwd.ln1+qkv");

  // Attention: norm, fused qkv projection, split into H query and Hkv key/value heads (cast to
  // the attention dtype); the kernels share each K/V head among H / Hkv query heads.
  a.ln1 = Tensor::empty(dev, s.hidden, cd);
  if (gpt2) a.ln1_mean = Tensor::empty(dev, s.rows, DType::f32);
  a.ln1_rstd = Tensor::empty(dev, s.rows, DType::f32);
  norm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, layer_of(p.ln1_w, pl), layer_of(p.ln1_b, pl));
  {
    Tensor qkv = Tensor::empty(dev, s.qkv, cd);  // temporary: backward needs q, k, v, not this
    linear(Projection::qkv, l, qkv, a.ln1, layer_of(p.qkv_b, pl));
    a.q = Tensor::empty(dev, s.heads, ad);
    a.k = Tensor::empty(dev, s.kv_heads, ad);
    a.v = Tensor::empty(dev, s.kv_heads, ad);
    heads_from_tokens({&a.q, &a.k, &a.v}, qkv);
  }
  if (!gpt2) {  // LLaMA: positions enter as rotations of q and k (in place: no memory)
    ops::rope_forward(a.q, rope_base());
    ops::rope_forward(a.k, rope_base());
  }
  phase.next("fwd.attention");
  Tensor heads_out = Tensor::empty(dev, s.heads, ad);
  if (options_.attention == AttentionKind::naive) {
    a.probs = Tensor::empty(dev, s.scores, ad);  // (B, H, T, T): the quadratic term
    ops::attention_naive_forward(a.q, a.k, a.v, a.probs, heads_out);
  } else {
    a.lse = Tensor::empty(dev, s.lse, DType::f32);
    ops::attention_fused_forward(a.q, a.k, a.v, heads_out, a.lse);
    a.attn_heads = heads_out;  // the fused backward reads its own output
  }
  phase.next("fwd.attn_proj");
  a.attn_out = Tensor::empty(dev, s.attn, cd);
  tokens_from_heads(a.attn_out, {&heads_out});
  heads_out.reset();  // naive: freed here; fused: still held by a.attn_heads
  {
    Tensor projected = Tensor::empty(dev, s.hidden, cd);
    // x + attention: the skip connection added by the projection's GEMM as it writes.
    linear(Projection::attn_out, l, projected, a.attn_out, layer_of(p.attn_proj_b, pl), x);
    a.residual_mid = projected;
  }

  // MLP: norm, up projection, activation, down projection, residual.
  phase.next("fwd.ln2+mlp_up");
  a.ln2 = Tensor::empty(dev, s.hidden, cd);
  if (gpt2) a.ln2_mean = Tensor::empty(dev, s.rows, DType::f32);
  a.ln2_rstd = Tensor::empty(dev, s.rows, DType::f32);
  norm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.residual_mid, layer_of(p.ln2_w, pl), layer_of(p.ln2_b, pl));
  Tensor hidden = Tensor::empty(dev, s.mlp, cd);  // temporary: recomputed in backward
  if (gpt2) {
    a.fc = Tensor::empty(dev, s.mlp, cd);
    linear(Projection::mlp_in, l, a.fc, a.ln2, layer_of(p.fc_b, pl));
    ops::gelu_forward(hidden, a.fc);
  } else {
    const Tensor none;
    a.gate = Tensor::empty(dev, s.mlp, cd);
    linear(Projection::mlp_in, l, a.gate, a.ln2, none);
    a.up = Tensor::empty(dev, s.mlp, cd);
    linear(Projection::mlp_up, l, a.up, a.ln2, none);
    ops::swiglu_forward(hidden, a.gate, a.up);
  }
  phase.next("fwd.mlp_down");
  out = Tensor::empty(dev, s.hidden, cd);
  linear(Projection::mlp_down, l, out, hidden, layer_of(p.proj_b, pl), a.residual_mid);
  hidden.reset();
  return a;
}

void Transformer::forward(const Tensor& tokens, const Tensor& targets, std::optional<float> dloss) {
  OOMLAB_CHECK(tokens.ndim() == 2 && tokens.dtype() == DType::i32,
               "Transformer::forward: tokens " << tokens.describe() << " must be (B, T) i32");
  OOMLAB_CHECK(targets.shape() == tokens.shape() && targets.dtype() == DType::i32,
               "Transformer::forward: targets " << targets.describe() << " must match tokens "
                                                << tokens.describe());
  OOMLAB_CHECK(tokens.dim(1) <= config_.max_seq,
               "Transformer::forward: T = " << tokens.dim(1) << " exceeds " << config_.name
                                            << "'s maxT = " << config_.max_seq);
  release_activations();
  TagScope tag(Tag::activations);
  shapes_ = activation_shapes(config_, tokens.dim(0), tokens.dim(1));
  const DType cd = dtype();
  tokens_ = tokens;

  gather(-1);
  ProfilePhases phase("fwd.embedding");
  Tensor embedded = Tensor::empty(device_, shapes_.hidden, cd);
  ops::embedding_forward(embedded, tokens, params_.wte, params_.wpe);
  residual_.push_back(embedded);
  phase.next("fwd.blocks");
  for (std::int64_t l = 0; l < config_.layers; ++l) {
    memory::SiteScope block("block " + std::to_string(l));
    Tensor out;
    gather(l);
    BlockActivations kept = block_forward(l, residual_.back(), out);
    gathered_layer_ = ParameterTensors();
    // Checkpointing: `kept` dies here, freeing the block's activations; backward recomputes them
    // from residual_[l]. Plain: they stay until the block's backward.
    if (!options_.checkpointing) blocks_.push_back(std::move(kept));
    residual_.push_back(out);
  }

  phase.next("fwd.lnf+lm_head");
  lnf_ = Tensor::empty(device_, shapes_.hidden, cd);
  if (config_.is_gpt2()) lnf_mean_ = Tensor::empty(device_, shapes_.rows, DType::f32);
  lnf_rstd_ = Tensor::empty(device_, shapes_.rows, DType::f32);
  norm_forward(lnf_, lnf_mean_, lnf_rstd_, residual_.back(), params_.lnf_w, params_.lnf_b);
  const Tensor& lm_weight = config_.tied_embeddings ? params_.wte : params_.lm_head;
  logits_ = Tensor::empty(device_, shapes_.logits, cd);
  ops::matmul(logits_, lnf_, lm_weight, Tensor(), kLinear);
  phase.next("fwd.cross_entropy");
  losses_ = Tensor::empty(device_, shapes_.rows, DType::f32);
  Tensor none;
  ops::softmax_cross_entropy(losses_, dloss ? logits_ : none, logits_, targets.view(shapes_.rows),
                             dloss.value_or(0.0f), config_.vocab);  // padding columns ignored
  has_dlogits_ = dloss.has_value();
}

float Transformer::mean_loss() const {
  OOMLAB_CHECK(losses_.defined(), "Transformer::mean_loss: no forward has run");
  if (device_.is_dry()) return std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> losses = losses_.to_host_f32();
  double sum = 0;
  for (float loss : losses) sum += loss;
  return static_cast<float>(sum / static_cast<double>(losses.size()));
}

void Transformer::release_activations() {
  blocks_.clear();
  residual_.clear();
  lnf_.reset();
  lnf_mean_.reset();
  lnf_rstd_.reset();
  logits_.reset();
  tokens_.reset();
  has_dlogits_ = false;
  if (sharded()) {  // the gathered embeddings, final norm and head go with the pass
    params_ = ParameterTensors();
    gathered_layer_ = ParameterTensors();
  }
}

// ---------------------------------------------------------------------------------------------
// Backward

// The LM head's weight gradient (tied embeddings, as GPT-2's: the head is wte, so the embedding's
// backward adds to the same gradient later). A frozen base: dx only.
void Transformer::lm_head_backward(Tensor& d_lnf) {
  Tensor none;
  Tensor ParameterTensors::*head = config_.tied_embeddings ? &ParameterTensors::wte : &ParameterTensors::lm_head;
  Tensor dw = gradient_for_write(head, -1);
  ops::matmul_backward(d_lnf, dw, none, logits_, lnf_, params_.*head, kLinear);
}

Tensor Transformer::block_backward(std::int64_t l, const Tensor& x, BlockActivations& a,
                                   const Tensor& d_out) {
  const auto [s, cd, ad, gpt2, dev, p, pl] = block_setup(l);
  using P = ParameterTensors;
  Tensor none;

  // MLP backward. Its hidden activation was not kept: recompute it from what was.
  ProfilePhases phase("bwd.mlp");
  Tensor d_ln2 = Tensor::empty(dev, s.hidden, cd);
  {
    Tensor hidden = Tensor::empty(dev, s.mlp, cd);
    if (gpt2) ops::gelu_forward(hidden, a.fc);
    else ops::swiglu_forward(hidden, a.gate, a.up);
    Tensor d_hidden = Tensor::empty(dev, s.mlp, cd);
    Tensor d_proj_b = gradient_for_write(&P::proj_b, l);
    linear_backward(Projection::mlp_down, l, d_hidden, d_proj_b, d_out, hidden);
    hidden.reset();
    if (gpt2) {
      Tensor d_fc = Tensor::empty(dev, s.mlp, cd);
      ops::gelu_backward(d_fc, d_hidden, a.fc);
      d_hidden.reset();
      Tensor d_fc_b = gradient_for_write(&P::fc_b, l);
      linear_backward(Projection::mlp_in, l, d_ln2, d_fc_b, d_fc, a.ln2);
    } else {
      Tensor d_gate = Tensor::empty(dev, s.mlp, cd);
      Tensor d_up = Tensor::empty(dev, s.mlp, cd);
      ops::swiglu_backward(d_gate, d_up, d_hidden, a.gate, a.up);
      d_hidden.reset();
      linear_backward(Projection::mlp_in, l, d_ln2, none, d_gate, a.ln2);
      d_gate.reset();
      Tensor d_ln2_up = Tensor::empty(dev, s.hidden, cd);
      linear_backward(Projection::mlp_up, l, d_ln2_up, none, d_up, a.ln2);
      d_up.reset();
      ops::residual_add(d_ln2, d_ln2, d_ln2_up);
    }
  }
  // Each kept activation is freed once its last reader has run, as autograd frees saved tensors:
  // the first layer's gradients are being allocated while its activations go.
  for (Tensor* done : {&a.fc, &a.gate, &a.up, &a.ln2}) done->reset();
  // Gradient at residual_mid: through the second norm, plus the skip connection.
  phase.next("bwd.ln2");
  Tensor d_mid = Tensor::empty(dev, s.hidden, cd);
  {
    Tensor d_ln2_w = norm_grad(&P::ln2_w, l, 0), d_ln2_b = norm_grad(&P::ln2_b, l, 1);
    norm_backward(d_mid, d_ln2_w, d_ln2_b, d_ln2, a.residual_mid, layer_of(p.ln2_w, pl), a.ln2_mean,
                  a.ln2_rstd, d_out);
    d_ln2.reset();
    for (Tensor* done : {&a.residual_mid, &a.ln2_mean, &a.ln2_rstd}) done->reset();
  }

  // Attention backward.
  phase.next("bwd.attn_proj");
  Tensor d_ln1 = Tensor::empty(dev, s.hidden, cd);
  {
    Tensor d_heads = Tensor::empty(dev, s.heads, ad);
    {
      Tensor d_attn_out = Tensor::empty(dev, s.attn, cd);
      Tensor d_b = gradient_for_write(&P::attn_proj_b, l);
      linear_backward(Projection::attn_out, l, d_attn_out, d_b, d_mid, a.attn_out);
      a.attn_out.reset();
      heads_from_tokens({&d_heads}, d_attn_out);
    }
    phase.next("bwd.attention");
    Tensor dq = Tensor::empty(dev, s.heads, ad);
    Tensor dk = Tensor::empty(dev, s.kv_heads, ad);
    Tensor dv = Tensor::empty(dev, s.kv_heads, ad);
    if (options_.attention == AttentionKind::naive) {
      ops::attention_naive_backward(a.q, a.k, a.v, a.probs, d_heads, dq, dk, dv);
    } else {
      ops::attention_fused_backward(a.q, a.k, a.v, a.attn_heads, a.lse, d_heads, dq, dk, dv);
    }
    d_heads.reset();
    for (Tensor* done : {&a.q, &a.k, &a.v, &a.probs, &a.attn_heads, &a.lse}) done->reset();
    if (!gpt2) {  // back through the rotations: the gradients w.r.t. the unrotated q and k
      ops::rope_backward(dq, rope_base());
      ops::rope_backward(dk, rope_base());
    }
    phase.next("bwd.qkv");
    Tensor d_qkv = Tensor::empty(dev, s.qkv, cd);
    tokens_from_heads(d_qkv, {&dq, &dk, &dv});
    dq.reset();
    dk.reset();
    dv.reset();
    Tensor d_qkv_b = gradient_for_write(&P::qkv_b, l);
    linear_backward(Projection::qkv, l, d_ln1, d_qkv_b, d_qkv, a.ln1);
    a.ln1.reset();
  }
  // Gradient at the block input: through the first norm, plus the skip connection.
  phase.next("bwd.ln1");
  Tensor d_x = Tensor::empty(dev, s.hidden, cd);
  Tensor d_ln1_w = norm_grad(&P::ln1_w, l, 0), d_ln1_b = norm_grad(&P::ln1_b, l, 1);
  norm_backward(d_x, d_ln1_w, d_ln1_b, d_ln1, x, layer_of(p.ln1_w, pl), a.ln1_mean, a.ln1_rstd, d_mid);
  d_ln1.reset();
  return d_x;
}

void Transformer::backward() {
  OOMLAB_CHECK(has_dlogits_, "Transformer::backward: the last forward ran without dloss");
  TagScope tag(Tag::activations);
  const DType cd = dtype();

  Tensor d_residual;  // gradient at the current point of the residual stream
  ProfilePhases phase("bwd.lm_head+lnf");
  {
    Tensor d_lnf = Tensor::empty(device_, shapes_.hidden, cd);
    lm_head_backward(d_lnf);
    logits_.reset();  // the largest single activation goes first
    d_residual = Tensor::empty(device_, shapes_.hidden, cd);
    Tensor d_lnf_w = norm_grad(&ParameterTensors::lnf_w, -1, 0);
    Tensor d_lnf_b = norm_grad(&ParameterTensors::lnf_b, -1, 1);
    norm_backward(d_residual, d_lnf_w, d_lnf_b, d_lnf, residual_.back(), params_.lnf_w, lnf_mean_,
                  lnf_rstd_);
  }
  lnf_.reset();
  lnf_mean_.reset();
  lnf_rstd_.reset();

  phase.next("bwd.blocks");
  for (std::int64_t l = config_.layers - 1; l >= 0; --l) {
    memory::SiteScope block("block " + std::to_string(l));
    const auto index = static_cast<std::size_t>(l);
    BlockActivations kept;
    gather(l);  // again: the forward's copy was freed after the block
    if (options_.checkpointing) {
      // Recompute: rerun the block's forward from its kept input; its output is not needed.
      Tensor recomputed_out;
      kept = block_forward(l, residual_[index], recomputed_out);
    } else {
      kept = std::move(blocks_[index]);
    }
    residual_[index + 1].reset();  // this block's output: no longer read
    d_residual = block_backward(l, residual_[index], kept, d_residual);
    scatter_gradients(l);
    gathered_layer_ = ParameterTensors();
    // `kept` (the block's activations) is freed at the end of this iteration.
  }
  phase.next("bwd.embedding");
  if (!frozen_base()) {
    Tensor d_wte = gradient_for_write(&ParameterTensors::wte, -1);
    Tensor d_wpe = gradient_for_write(&ParameterTensors::wpe, -1);
    ops::embedding_backward(d_wte, d_wpe, d_residual, tokens_);
  }
  d_residual.reset();
  scatter_gradients(-1);
  release_activations();
}

// ---------------------------------------------------------------------------------------------

namespace {

// Elements of a spec this rank holds: all of them, or with sharding its rows of each piece.
std::size_t held_elements(const ParameterSpec& spec, const TransformerConfig& config, const TrainOptions& options) {
  if (options.shard_ranks <= 0) return static_cast<std::size_t>(shape_numel(spec.shape));
  const std::int64_t pieces = stacked_per_layer(spec) ? config.layers : 1;
  return static_cast<std::size_t>(pieces * shape_numel(shard_shape(piece_shape(spec), 0, options.shard_ranks)));
}

}  // namespace

std::size_t parameter_bytes(const TransformerConfig& config, const TrainOptions& options) {
  const DType cd = compute_dtype(options.precision);
  std::size_t bytes = int8_scale_bytes(config, options) + nf4_scale_bytes(config, options) +
                      adapter_elements(config, options) * dtype_size(cd);
  for (const ParameterSpec& spec : parameter_specs(config)) {
    if (stored_nf4(spec, options)) bytes += static_cast<std::size_t>(shape_numel(stored_shape(spec, options)));
    else bytes += held_elements(spec, config, options) * dtype_size(stored_int8(spec, options) ? DType::i8 : cd);
  }
  return bytes;
}

std::size_t gradient_bytes(const TransformerConfig& config, const TrainOptions& options) {
  if (options.lora.enabled()) {  // the adapters' and the norm gradients' sink
    return adapter_elements(config, options) * dtype_size(compute_dtype(options.precision)) +
           2 * static_cast<std::size_t>(config.channels) * sizeof(float);
  }
  std::size_t bytes = 0;
  for (const ParameterSpec& spec : parameter_specs(config)) {
    bytes += held_elements(spec, config, options) * dtype_size(gradient_dtype(spec, options.precision));
  }
  return bytes;
}

std::size_t trainable_elements(const TransformerConfig& config, const TrainOptions& options) {
  if (options.lora.enabled()) return adapter_elements(config, options);
  std::size_t elements = 0;
  for (const ParameterSpec& spec : parameter_specs(config)) elements += held_elements(spec, config, options);
  return elements;
}

std::string describe_memory_plan(const TransformerConfig& config, const TrainOptions& options,
                                 std::int64_t batch, std::int64_t seq) {
  const DType cd = compute_dtype(options.precision);
  const std::size_t optimizer_per_param =
      options.adam_8bit ? (cd == DType::f32 ? 0 : 4) + 2 : (cd == DType::f32 ? 2 : 3) * sizeof(float);
  const std::size_t block = block_activation_bytes(config, options, batch, seq);
  const std::size_t outer = outer_activation_bytes(config, options, batch, seq);
  const std::size_t kept_blocks = options.checkpointing ? 1 : static_cast<std::size_t>(config.layers);
  std::ostringstream out;
  out << config.name << " B=" << batch << " T=" << seq << " " << precision_name(options.precision)
      << ", " << attention_name(options.attention) << " attention: parameters "
      << format_size(parameter_bytes(config, options));
  if (options.lora.enabled()) {
    out << " (base frozen" << (options.lora.int8_base ? ", int8 projections" : "")
        << (options.lora.nf4_base ? ", nf4 projections" : "") << "; LoRA rank "
        << options.lora.rank << " on " << lora_targets_name(options.lora.targets) << " projections: "
        << trainable_elements(config, options) << " trainable)";
  }
  out << ", gradients " << format_size(gradient_bytes(config, options)) << ", optimizer "
      << format_size(saturating_mul(trainable_elements(config, options), optimizer_per_param))
      << (options.offload_optimizer ? " (in host memory)" : "") << ", activations "
      << format_size(block) << " per block x " << kept_blocks
      << (options.checkpointing ? " (recomputed one at a time)" : "") << " + "
      << format_size(outer) << " outside the blocks = "
      << format_size((SaturatingSize(block) * kept_blocks + outer).value);
  return out.str();
}

}  // namespace oomlab::model
