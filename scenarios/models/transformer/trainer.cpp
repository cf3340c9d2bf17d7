#include "scenarios/models/transformer/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include "harness/device/host_memory.hpp"
#include "harness/device/op_profiler.hpp"
#include "harness/device/stream_event.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/tags.hpp"
#include "kernels/core/check.hpp"
#include "kernels/transformer/adamw.hpp"
#include "kernels/transformer/adamw8bit.hpp"
#include "kernels/transformer/cast.hpp"
#include "kernels/transformer/grad_norm.hpp"

namespace oomlab::model {
namespace {

using memory::Tag;
using memory::TagScope;

// Elements [begin, end) of a tensor seen flat; shares storage.
Tensor flat_range(const Tensor& t, std::int64_t begin, std::int64_t end) {
  return t.view({-1}).slice(begin, end);
}

// Bytes between the host buffer and a device tensor, ordered on `stream` (blocking memcpy on
// host, nothing on dry).
void stream_copy(Device& device, void* dst, const void* src, std::size_t bytes, CopyKind kind,
                 memory::StreamHandle stream) {
  if (device.is_dry()) return;
  if (!device.is_cuda()) kind = CopyKind::host_to_host;
  device.copy_async(dst, src, bytes, kind, stream);
}

}  // namespace

Trainer::Trainer(Transformer& model, const LogFn& log)
    : model_(model),
      mixed_(model.dtype() != DType::f32),
      offload_(model.options().offload_optimizer) {
  const TrainOptions& options = model.options();
  scaler_.scale = model.dtype() == DType::f16 ? options.initial_loss_scale : 1.0f;
  scaler_.growth_interval = options.loss_scale_growth_interval;
  Device& device = model.device();
  std::vector<Tensor> params = model.trainable_tensors();
  TagScope tag(Tag::optimizer);
  if (!offload_) {
    for (const Tensor& param : params) {
      if (mixed_) {
        Tensor master = Tensor::empty(device, param.shape(), DType::f32);
        ops::cast(master, param);  // the master starts as the parameters' values
        master_.push_back(master);
      } else {
        master_.push_back(param);  // f32: the parameters are the master weights
      }
      if (options.adam_8bit) {
        const Shape blocks{ops::adam8bit_blocks(param.numel())};
        m_.push_back(Tensor::zeros(device, {param.numel()}, DType::i8));
        m_absmax_.push_back(Tensor::zeros(device, blocks, DType::f32));
        v_.push_back(Tensor::zeros(device, {param.numel()}, DType::i8));
        v_absmax_.push_back(Tensor::zeros(device, blocks, DType::f32));
      } else {
        m_.push_back(Tensor::zeros(device, param.shape(), DType::f32));
        v_.push_back(Tensor::zeros(device, param.shape(), DType::f32));
      }
    }
  } else {
    OOMLAB_CHECK(!options.adam_8bit, "8-bit AdamW keeps its moments on the device: it does not combine with offload");
    const DeviceKind kind = device.kind();
    if (!device.is_dry()) {  // refuse before pinning tens of GiB the host does not have
      std::size_t needed = 0;
      for (const Tensor& param : params)
        needed += static_cast<std::size_t>(param.numel()) * sizeof(float) * (mixed_ ? 3 : 2);
      if (const auto memory = read_host_memory()) {
        const std::string shortfall = host_memory_shortfall(
            needed, *memory,
            "the offloaded optimizer state (f32 " + std::string(mixed_ ? "master weights and " : "") + "moments)");
        if (!shortfall.empty()) throw std::runtime_error(shortfall);
      }
    }
    chunk_elements_ = kOffloadChunkElements;  // no larger than the largest tensor needs
    std::int64_t largest = 0;
    for (const Tensor& param : params) largest = std::max(largest, param.numel());
    chunk_elements_ = std::min(chunk_elements_, largest);
    for (const Tensor& param : params) {
      const std::size_t bytes = static_cast<std::size_t>(param.numel()) * sizeof(float);
      HostState state{HostBuffer(), HostBuffer(kind, bytes, /*zero_filled=*/true),
                      HostBuffer(kind, bytes, /*zero_filled=*/true)};
      if (mixed_) {  // the master starts as the parameters' values, widened a chunk at a time
        state.master = HostBuffer(kind, bytes, /*zero_filled=*/true);
        for (std::int64_t begin = 0; begin < param.numel(); begin += chunk_elements_) {
          const std::int64_t end = std::min(param.numel(), begin + chunk_elements_);
          Tensor master = Tensor::empty(device, {end - begin}, DType::f32, Tag::workspace);
          ops::cast(master, flat_range(param, begin, end));
          if (!device.is_dry()) {
            master.copy_to_host(
                static_cast<char*>(state.master.data()) + static_cast<std::size_t>(begin) * sizeof(float),
                static_cast<std::size_t>(end - begin) * sizeof(float));
          }
        }
      }
      host_state_.push_back(std::move(state));
    }
    const Shape ring{kOffloadSlots, chunk_elements_};
    offload_streams_ = std::make_unique<OffloadStreams>(device, kOffloadSlots);
    if (mixed_) staging_master_ = Tensor::empty(device, ring, DType::f32);
    staging_m_ = Tensor::empty(device, ring, DType::f32);
    staging_v_ = Tensor::empty(device, ring, DType::f32);
  }
  grad_norm_ = Tensor::zeros(device, {1}, DType::f32);
  if (model.dtype() == DType::f16) found_inf_ = Tensor::zeros(device, {1}, DType::f32);
  if (log) {
    log("optimizer state (" + std::string(options.adam_8bit ? "8-bit AdamW" : "AdamW") +
        (mixed_ ? ", f32 master weights" : "") + "): " +
        format_size(device_state_bytes()) + " on the device, " +
        format_size(host_state_bytes()) + " in host memory" +
        (offload_ && device.is_cuda() ? " (pinned)" : ""));
  }
}

std::size_t Trainer::device_state_bytes() const {
  std::size_t bytes = 0;
  for (const std::vector<Tensor>* state : {&m_, &v_, &m_absmax_, &v_absmax_}) {
    for (const Tensor& t : *state) bytes += t.nbytes();
  }
  if (mixed_) for (const Tensor& t : master_) bytes += t.nbytes();
  for (const Tensor* t : {&staging_master_, &staging_m_, &staging_v_}) {
    if (t->defined()) bytes += t->nbytes();
  }
  return bytes;
}

std::size_t Trainer::host_state_bytes() const {
  std::size_t bytes = 0;
  for (const HostState& s : host_state_) bytes += s.master.bytes() + s.m.bytes() + s.v.bytes();
  return bytes;
}

std::size_t Trainer::offload_bytes_per_step() const {
  return offload_ ? 2 * host_state_bytes() : 0;  // every state byte goes in and comes back
}

std::optional<OffloadLink> Trainer::measure_offload_link() {
  Device& device = model_.device();
  if (!offload_ || !device.is_cuda()) return std::nullopt;
  const std::size_t chunk = static_cast<std::size_t>(chunk_elements_) * sizeof(float);
  const std::size_t chunks = std::max<std::size_t>(1, (std::size_t{1} << 30) / chunk);
  // Pinned, like the state: slots 0..1 feed the copies in, 2..3 take the copies out.
  HostBuffer host(device.kind(), 2 * kOffloadSlots * chunk);
  OffloadStreams& streams = *offload_streams_;
  StreamEvent in_done(device.kind()), out_done(device.kind());
  auto seconds = [&](bool in, bool out) {
    device.synchronize();
    in_done.record(streams.in());
    in_done.synchronize();
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < chunks; ++i) {
      const int slot = static_cast<int>(i % kOffloadSlots);
      char* host_in = static_cast<char*>(host.data()) + static_cast<std::size_t>(slot) * chunk;
      char* host_out = host_in + kOffloadSlots * chunk;
      if (in) {
        stream_copy(device, staging_m_.slice(slot, slot + 1).data(), host_in, chunk, CopyKind::host_to_device,
                    streams.in());
      }
      if (out) {
        stream_copy(device, host_out, staging_v_.slice(slot, slot + 1).data(), chunk, CopyKind::device_to_host,
                    streams.out());
      }
    }
    in_done.record(streams.in());
    out_done.record(streams.out());
    in_done.synchronize();
    out_done.synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  seconds(true, true);  // warm-up: first touches of the pages and the copy engines
  const double bytes = static_cast<double>(chunks * chunk);
  OffloadLink link;
  link.h2d = bytes / seconds(true, false);
  link.d2h = bytes / seconds(false, true);
  link.both = 2 * bytes / seconds(true, true);
  return link;
}

StepReport Trainer::step(const std::vector<MicroBatch>& micro_batches, bool inject_overflow) {
  OOMLAB_CHECK(!micro_batches.empty(), "Trainer::step: no micro-batches");
  const bool f16 = model_.dtype() == DType::f16;
  OOMLAB_CHECK(!inject_overflow || f16, "Trainer::step: overflow injection needs f16 loss scaling");
  StepReport report;
  report.loss_scale = scaler_.scale;

  // Gradient accumulation: each micro-batch's loss is divided by the total token count, so the
  // summed gradients equal those of one batch holding every micro-batch.
  std::int64_t tokens = 0;
  for (const MicroBatch& batch : micro_batches) tokens += batch.tokens.numel();
  const float dloss = scaler_.scale / static_cast<float>(tokens);
  ProfilePhases phase("train.zero_grads");
  model_.zero_grads();
  phase.next("train.forward+backward");
  double loss_sum = 0;
  for (const MicroBatch& batch : micro_batches) {
    model_.forward(batch.tokens, batch.targets, dloss);
    loss_sum += model_.mean_loss() * static_cast<double>(batch.tokens.numel());
    model_.backward();
  }
  report.loss = static_cast<float>(loss_sum / static_cast<double>(tokens));

  phase.next("train.unscale+clip");
  std::vector<Tensor> grads;  // those backward wrote
  for (const Tensor& grad : model_.trainable_gradients()) {
    if (grad.defined()) grads.push_back(grad);
  }
  if (f16) {
    found_inf_.zero();
    if (inject_overflow) flat_range(grads.front(), 0, 1).fill(std::numeric_limits<double>::infinity());
    ops::unscale_and_check(grads, 1.0f / scaler_.scale, found_inf_);
    const bool overflow = ops::read_found_inf(found_inf_, /*dry_value=*/inject_overflow);
    report.applied = scaler_.update(overflow);
    if (!report.applied) return report;  // skipped: the weights keep their values
  }
  if (model_.options().grad_clip > 0) {
    ops::global_grad_norm(grad_norm_, grads);
    model_.all_reduce_grad_norm(grad_norm_);  // sharded: the norm over every rank's shards
    ops::clip_grads_by_norm(grads, grad_norm_, model_.options().grad_clip);
  }
  ++optimizer_steps_;
  phase.next("train.optimizer");
  if (offload_) update_offloaded();
  else update_on_device();
  return report;
}

void Trainer::update_on_device() {
  std::vector<Tensor> params = model_.trainable_tensors();
  std::vector<Tensor> grads = model_.trainable_gradients();
  std::vector<ops::AdamWTensors> adamw;  // one many-tensor step (a few launches, not one per tensor)
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!grads[i].defined()) continue;  // no gradient this step: the parameter keeps its value
    Tensor copy = mixed_ ? params[i] : Tensor();
    if (model_.options().adam_8bit) {
      ops::adamw8bit_step(master_[i], copy, grads[i], m_[i], m_absmax_[i], v_[i], v_absmax_[i],
                          model_.options().adamw, optimizer_steps_);
    } else {
      adamw.push_back({master_[i], copy, grads[i], m_[i], v_[i]});
    }
  }
  ops::adamw_step(adamw, model_.options().adamw, optimizer_steps_);
}

// For each tensor, chunk by chunk: copy the state in (in stream), update (compute stream), copy
// it back (out stream), through kOffloadSlots staging slots, so chunk i's copy in overlaps chunk
// i-1's update and copy out (OffloadStreams orders the three streams).
void Trainer::update_offloaded() {
  Device& device = model_.device();
  std::vector<Tensor> params = model_.trainable_tensors();
  std::vector<Tensor> grads = model_.trainable_gradients();
  Tensor none;
  OffloadStreams& streams = *offload_streams_;
  streams.begin_update();
  std::int64_t chunk_index = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!grads[i].defined()) continue;  // no gradient this step: the parameter keeps its value
    HostState& state = host_state_[i];
    const std::int64_t n = params[i].numel();
    for (std::int64_t begin = 0; begin < n; begin += chunk_elements_, ++chunk_index) {
      const std::int64_t end = std::min(n, begin + chunk_elements_);
      const int slot = static_cast<int>(chunk_index % kOffloadSlots);
      const std::size_t offset = static_cast<std::size_t>(begin) * sizeof(float);
      const std::size_t bytes = static_cast<std::size_t>(end - begin) * sizeof(float);
      auto host_at = [&](const HostBuffer& buffer) {
        return buffer.data() ? static_cast<char*>(buffer.data()) + offset : nullptr;
      };
      auto slot_of = [&](const Tensor& ring) { return ring.slice(slot, slot + 1).view({-1}).slice(0, end - begin); };
      Tensor m = slot_of(staging_m_), v = slot_of(staging_v_);
      Tensor master = mixed_ ? slot_of(staging_master_) : flat_range(params[i], begin, end);
      Tensor param = flat_range(params[i], begin, end);
      Tensor grad = flat_range(grads[i], begin, end);

      streams.before_load(slot);
      stream_copy(device, m.data(), host_at(state.m), bytes, CopyKind::host_to_device, streams.in());
      stream_copy(device, v.data(), host_at(state.v), bytes, CopyKind::host_to_device, streams.in());
      if (mixed_) {
        stream_copy(device, master.data(), host_at(state.master), bytes, CopyKind::host_to_device, streams.in());
      }
      streams.loaded(slot);
      ops::adamw_step(master, mixed_ ? param : none, grad, m, v, model_.options().adamw, optimizer_steps_);
      streams.updated(slot);
      if (mixed_) {
        stream_copy(device, host_at(state.master), master.data(), bytes, CopyKind::device_to_host, streams.out());
      }
      stream_copy(device, host_at(state.m), m.data(), bytes, CopyKind::device_to_host, streams.out());
      stream_copy(device, host_at(state.v), v.data(), bytes, CopyKind::device_to_host, streams.out());
      streams.stored(slot);
    }
  }
  streams.end_update();
}

}  // namespace oomlab::model
