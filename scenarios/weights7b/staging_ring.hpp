// The pieces of the streamed loader that touch CUDA directly, behind a header with no CUDA
// types: pinned host buffers (cudaHostAlloc, so copies are true async DMA) and events that
// order the copy stream against the compute stream. On host and dry the buffers are ordinary
// memory (dry: none at all) and the ordering calls do nothing, because every copy and kernel
// there has finished when its call returns.
#pragma once
#include <cstddef>
#include <cstdint>

#include "harness/device/device.hpp"
#include "scenarios/models/safetensors/safetensors_reader.hpp"

namespace oomlab::scenarios::weights7b {

// Host staging memory: pinned on cuda, plain on host, absent (nullptr) on dry.
class HostStaging {
 public:
  HostStaging(DeviceKind kind, std::size_t bytes);
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;
  std::uint8_t* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  DeviceKind kind_;
  std::uint8_t* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A cudaEvent_t on cuda (timing disabled); inert elsewhere. An event never recorded counts as
// complete, as CUDA's do, so the first pass through the ring waits for nothing.
class StreamEvent {
 public:
  explicit StreamEvent(DeviceKind kind);
  ~StreamEvent();
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;
  void record(memory::StreamHandle stream);
  void make_stream_wait(memory::StreamHandle stream) const;  // stream waits for this event
  void synchronize() const;                                  // the host waits for it

 private:
  std::uintptr_t event_ = 0;
};

// Bytes [offset, offset + bytes) of a tensor into dst, read with pread() by up to 16 threads: one
// core cannot copy from the page cache into pinned memory as fast as PCIe drains it, and copying
// out of the mapping instead pays a page fault per 4 KiB that does not scale with threads.
void parallel_read(const safetensors::SafetensorsFile& file, const safetensors::TensorEntry& entry,
                   std::uint64_t offset, void* dst, std::size_t bytes);

}  // namespace oomlab::scenarios::weights7b
