// One training step over micro-batches: free the gradients, forward+backward each micro-batch
// (gradients accumulate), then (f16) unscale and check for overflow, clip by the global norm, and
// AdamW. The optimizer state is f32: moments m and v, plus master weights when the model runs in
// bf16/f16 (with adam_8bit, on the device only: the moments are a byte each plus a scale per block). It lives on the
// device (Tag::optimizer) or, with offload_optimizer, in host memory (pinned on cuda) and is streamed through a fixed
// device staging ring chunk by chunk, copies in and out overlapping the update (offload_streams.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "harness/device/host_buffer.hpp"
#include "kernels/transformer/loss_scale.hpp"
#include "scenarios/models/transformer/offload_streams.hpp"
#include "scenarios/models/transformer/transformer.hpp"

namespace oomlab::model {

// Elements per streamed chunk of each state tensor (16 MiB of f32), or the largest parameter
// tensor's size when that is smaller (tiny models).
constexpr std::int64_t kOffloadChunkElements = std::int64_t{4} << 20;
// Staging slots: chunk i uses slot i % 2, so its copy in runs while chunk i-1 is updated and
// copied out (a third slot would overlap more, but on small models the ring would outweigh the
// state it offloads).
constexpr int kOffloadSlots = 2;

struct MicroBatch {
  Tensor tokens;   // (B, T) i32
  Tensor targets;  // (B, T) i32
};

// The pinned link as the offloaded optimizer uses it: bytes per second host to device, device to
// host, and in total with both directions busy at once (its update moves both).
struct OffloadLink {
  double h2d = 0, d2h = 0, both = 0;
};

struct StepReport {
  float loss = 0;           // mean over the micro-batches (NaN on dry)
  bool applied = true;      // false when an f16 overflow skipped the optimizer step
  float loss_scale = 1.0f;  // the scale used for this step's backward
};

class Trainer {
 public:
  // Allocates the optimizer state for `model` (device or offloaded, per its options).
  explicit Trainer(Transformer& model, const LogFn& log = {});

  // inject_overflow: poison one gradient with +inf before the overflow check (f16 only), as a
  // real overflow would; on dry, where there are no values, the check reports it directly.
  StepReport step(const std::vector<MicroBatch>& micro_batches, bool inject_overflow = false);

  const ops::GradScaler& scaler() const { return scaler_; }
  int optimizer_steps() const { return optimizer_steps_; }
  std::size_t device_state_bytes() const;  // optimizer bytes allocated on the device
  std::size_t host_state_bytes() const;    // optimizer bytes in host memory
  // Bytes the offloaded update moves per optimizer step, in plus out (0 without offload).
  std::size_t offload_bytes_per_step() const;
  // cuda with offload: times 1 GiB each way between a pinned host buffer and the staging ring on
  // the update's own streams, each direction alone and both at once. nullopt elsewhere.
  std::optional<OffloadLink> measure_offload_link();

 private:
  struct HostState {  // one parameter tensor's offloaded state
    HostBuffer master, m, v;  // master only in bf16/f16
  };

  void update_on_device();
  void update_offloaded();

  Transformer& model_;
  bool mixed_;    // bf16/f16: f32 master weights separate from the parameters
  bool offload_;
  ops::GradScaler scaler_;
  int optimizer_steps_ = 0;
  std::vector<Tensor> master_, m_, v_;  // on device (master_ aliases params in f32)
  std::vector<Tensor> m_absmax_, v_absmax_;  // adam_8bit: m_ and v_ hold byte codes, these the block scales
  std::vector<HostState> host_state_;   // offloaded
  std::int64_t chunk_elements_ = 0;
  Tensor staging_master_, staging_m_, staging_v_;  // (kOffloadSlots, chunk) f32 each
  // Declared after the staging tensors, so it is destroyed first: it waits for the last copy
  // out of them.
  std::unique_ptr<OffloadStreams> offload_streams_;
  Tensor grad_norm_;  // (1) f32
  Tensor found_inf_;  // (1) f32, f16 only
};

}  // namespace oomlab::model
