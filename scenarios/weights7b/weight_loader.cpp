#include "scenarios/weights7b/weight_loader.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <stdexcept>

#include "harness/device/stream_event.hpp"
#include "harness/memory/site.hpp"
#include "kernels/transformer/cast.hpp"
#include "kernels/transformer/quantize.hpp"

namespace oomlab::scenarios::weights7b {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// At least 1: a zero-element tensor has no rows to stage, and nothing divides by 0.
std::int64_t row_length(const TensorEntry& entry) {
  if (entry.shape.size() >= 2) return std::max<std::int64_t>(1, entry.shape.back());
  return std::max<std::int64_t>(1, entry.numel());  // a norm weight is one row
}

// Where a tensor's allocation is made, as an OOM names it: "layer 17 › mlp.up_proj.weight" for
// Hugging Face's "model.layers.17.mlp.up_proj.weight", the name itself otherwise.
std::string tensor_site(const std::string& name) {
  const std::string layers = "model.layers.";
  if (name.rfind(layers, 0) != 0) return name;
  const std::size_t dot = name.find('.', layers.size());
  if (dot == std::string::npos) return name;
  return "layer " + name.substr(layers.size(), dot - layers.size()) + " › " + name.substr(dot + 1);
}

bool is_quantised(WeightFormat format, const TensorEntry& entry) {
  return format == WeightFormat::int8_rowwise && entry.shape.size() == 2;
}

// The copy stream and the events that order it against the compute stream. Its destructor waits
// for the copies still in flight, also on an exception. (The host side of the copies, the pinned
// ring, is the PinnedStager's.)
struct CopyPipeline {
  explicit CopyPipeline(Device& device)
      : device(device),
        copied{StreamEvent(device.kind()), StreamEvent(device.kind())},
        slot_consumed{StreamEvent(device.kind()), StreamEvent(device.kind())},
        handover(device.kind()),
        copy_stream(device.create_stream()) {}
  ~CopyPipeline() {
    try {
      for (const StreamEvent& event : copied) event.synchronize();
      device.destroy_stream(copy_stream);
    } catch (...) {
      // After a device error the context is unusable anyway; nothing more to release safely.
    }
  }

  Device& device;
  StreamEvent copied[2];         // the h2d copy into device slot i has finished
  StreamEvent slot_consumed[2];  // the kernel reading device slot i has finished
  StreamEvent handover;          // orders the two streams at the start and the end
  memory::StreamHandle copy_stream;
};

}  // namespace

std::size_t LoadedWeights::bytes() const {
  std::size_t total = 0;
  for (const auto& [name, tensor] : tensors) total += tensor.nbytes();
  for (const auto& [name, tensor] : scales) total += tensor.nbytes();
  return total;
}

std::size_t device_staging_bytes(const CheckpointSource& source, WeightFormat format,
                                 std::size_t chunk_bytes) {
  const bool direct = source.uniform_dtype() == DType::bf16 && format == WeightFormat::bf16;
  return direct ? 0 : 2 * chunk_bytes;
}

LoadedWeights load_whole_file_then_cast(Device& device, const CheckpointSource& source,
                                        LoadStats& stats) {
  const DType file_dtype = source.uniform_dtype();
  if (!is_floating(file_dtype)) {
    throw std::invalid_argument(source.label() + ": the whole-file load reads an f32, bf16 or f16 checkpoint, not " +
                                dtype_name(file_dtype));
  }
  const std::uint64_t bytes = source.data_bytes();
  const std::size_t element = dtype_size(file_dtype);
  stats = LoadStats{};

  // 1. The whole checkpoint into pageable host memory (what torch.load / load_file(device="cpu")
  //    do), every shard's tensors back to back.
  std::unique_ptr<std::uint8_t[]> host_copy;
  if (source.has_data()) {
    host_copy.reset(new std::uint8_t[bytes]);
    for (const TensorEntry& entry : source.tensors()) {
      std::copy_n(source.data(entry), entry.bytes(), host_copy.get() + entry.begin);
    }
  }

  // 2. Every byte to the device in one upload, in the file's dtype: 4 bytes per parameter for f32.
  memory::TagScope tag(memory::Tag::weights);
  const memory::SiteScope loading("load weights");
  Tensor whole_file;
  {
    const memory::SiteScope upload("upload the whole file");
    whole_file = Tensor::empty(device, {static_cast<std::int64_t>(bytes / element)}, file_dtype);
  }
  if (host_copy) whole_file.copy_from_host(host_copy.get(), bytes);
  host_copy.reset();

  // 3. A bf16 copy of each tensor, cast on the device: 2 more bytes per parameter while the
  //    upload is still alive. THIS is the 6 bytes/param peak (4 for a bf16 or f16 file: the
  //    state dict and the model both on the device).
  LoadedWeights result;
  for (const TensorEntry& entry : source.tensors()) {
    const memory::SiteScope site(tensor_site(entry.name));
    Tensor weight = Tensor::empty(device, entry.shape, DType::bf16);
    const Tensor file_view = whole_file.slice(static_cast<std::int64_t>(entry.begin / element),
                                              static_cast<std::int64_t>(entry.end / element));
    ops::cast(weight, file_view);
    result.tensors.emplace(entry.name, std::move(weight));
  }
  device.synchronize();
  stats.file_bytes = bytes;
  stats.chunks = source.tensors().size();
  return result;
}

LoadedWeights stream_load(Device& device, const CheckpointSource& source, WeightFormat format,
                          std::size_t chunk_bytes, LoadStats& stats, const RingShape& ring) {
  const DType file_dtype = source.uniform_dtype();
  if (!is_floating(file_dtype)) {
    throw std::invalid_argument(source.label() + ": weights must be f32, bf16 or f16, not " +
                                dtype_name(file_dtype));
  }
  const std::size_t element = dtype_size(file_dtype);
  if (chunk_bytes == 0 || chunk_bytes % element != 0) {
    throw std::invalid_argument("stream_load: chunk of " + std::to_string(chunk_bytes) +
                                " bytes is not a positive multiple of the element size");
  }
  const std::int64_t chunk_elements = static_cast<std::int64_t>(chunk_bytes / element);
  for (const TensorEntry& entry : source.tensors()) {
    if (row_length(entry) > chunk_elements) {
      throw std::invalid_argument(source.label() + ": tensor '" + entry.name + "' has rows of " +
                                  std::to_string(row_length(entry)) + " elements, more than a " +
                                  std::to_string(chunk_bytes) + "-byte staging chunk holds");
    }
  }
  // A bf16 file needs no conversion: chunks go straight from pinned memory into the weights.
  const bool direct = file_dtype == DType::bf16 && format == WeightFormat::bf16;
  stats = LoadStats{};
  stats.device_staging_bytes = device_staging_bytes(source, format, chunk_bytes);

  CopyPipeline pipe(device);
  const memory::StreamHandle compute = device.stream();
  Tensor device_slot[2];
  if (!direct) {
    memory::TagScope tag(memory::Tag::workspace);
    for (Tensor& slot : device_slot) slot = Tensor::empty(device, {chunk_elements}, file_dtype);
  }
  // Blocks freed on the compute stream before the load may still be in use there.
  pipe.handover.record(compute);
  pipe.handover.make_stream_wait(pipe.copy_stream);

  memory::TagScope tag(memory::Tag::weights);
  const memory::SiteScope loading("load weights");
  LoadedWeights result;
  // Declared after `result`: on an exception it is destroyed first and waits for its DMAs, which
  // may still be writing into result's weights.
  PinnedStager stager(device, pipe.copy_stream, ring);
  stats.host_staging_bytes = stager.host_staging_bytes();
  std::size_t chunk_index = 0;
  for (const TensorEntry& entry : source.tensors()) {
    const bool quantised = is_quantised(format, entry);
    const memory::SiteScope site(tensor_site(entry.name));
    const auto allocate_start = Clock::now();
    Tensor weight = Tensor::empty(device, entry.shape, quantised ? DType::i8 : DType::bf16);
    Tensor scales;
    if (quantised) scales = Tensor::empty(device, {entry.shape[0]}, DType::f32);
    stats.allocate_seconds += seconds_since(allocate_start);
    const std::uint8_t* file_bytes = source.data(entry);
    if (direct) {
      // A bf16 file's bytes go straight into the weight on the copy stream, while this thread
      // allocates the next one. No record_stream here: the weights outlive this function and its
      // copy stream, and an event recorded on a destroyed stream at their free crashes. The
      // handover below makes the compute stream wait for every copy before anyone can use (or
      // free and reuse) these blocks.
      stager.upload(weight.data(), file_bytes, entry.bytes());
      ++chunk_index;
    } else {
      const Tensor flat_weight = weight.view({entry.numel()});
      const std::int64_t cols = row_length(entry);
      const std::int64_t rows = entry.numel() / cols;
      const std::int64_t rows_per_chunk = chunk_elements / cols;
      for (std::int64_t r0 = 0; r0 < rows; r0 += rows_per_chunk, ++chunk_index) {
        const std::int64_t r1 = std::min(rows, r0 + rows_per_chunk);
        const std::int64_t first = r0 * cols, count = (r1 - r0) * cols;
        const std::size_t bytes = static_cast<std::size_t>(count) * element;
        const std::size_t slot = chunk_index % 2;
        pipe.slot_consumed[slot].make_stream_wait(pipe.copy_stream);  // its last reader is done
        stager.upload(device_slot[slot].data(), file_bytes ? file_bytes + first * element : nullptr, bytes);
        stager.flush();  // the chunk's DMA is on the copy stream: the event below comes after it
        pipe.copied[slot].record(pipe.copy_stream);
        pipe.copied[slot].make_stream_wait(compute);
        const Tensor staged = device_slot[slot].slice(0, count);
        if (quantised) {
          Tensor q_rows = weight.slice(r0, r1);
          Tensor scale_rows = scales.slice(r0, r1);
          ops::quantize_int8_rowwise(q_rows, scale_rows, staged.view({r1 - r0, cols}));
        } else {
          Tensor target = flat_weight.slice(first, first + count);
          ops::cast(target, staged);
        }
        pipe.slot_consumed[slot].record(compute);
      }
    }
    stats.file_bytes += entry.bytes();
    result.tensors.emplace(entry.name, std::move(weight));
    if (quantised) result.scales.emplace(entry.name, std::move(scales));
  }
  stats.chunks = chunk_index;
  stager.finish();  // every DMA queued and done reading the pinned ring; ring and team released
  stats.setup_seconds = stager.times().setup;
  stats.host_copy_seconds = stager.times().host_copy;
  stats.slot_wait_seconds = stager.times().wait;
  stats.release_seconds = stager.times().release;

  // The weights are ready for compute-stream work once the copy stream's last copy is done.
  pipe.handover.record(pipe.copy_stream);
  pipe.handover.make_stream_wait(compute);
  for (Tensor& slot : device_slot) {
    if (slot.defined()) device.allocator().record_stream(slot.data(), pipe.copy_stream);
    slot.reset();
  }
  device.synchronize();
  return result;
}

}  // namespace oomlab::scenarios::weights7b
