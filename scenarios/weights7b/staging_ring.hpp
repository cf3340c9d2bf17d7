// The pieces of the streamed loader that touch CUDA directly, behind a header with no CUDA
// types: pinned host buffers (cudaHostAlloc, so copies are true async DMA) and events that
// order the copy stream against the compute stream. On host and dry the buffers are ordinary
// memory (dry: none at all) and the ordering calls do nothing, because every copy and kernel
// there has finished when its call returns.
#pragma once
#include <cstddef>
#include <cstdint>

#include "harness/device/device.hpp"
#include "harness/device/stream_event.hpp"
#include "scenarios/models/safetensors/safetensors_reader.hpp"

namespace oomlab::scenarios::weights7b {

using oomlab::StreamEvent;  // orders the copy stream against the compute stream

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

// Bytes [offset, offset + bytes) of a tensor into dst, read with pread() by up to 16 threads: one
// core cannot copy from the page cache into pinned memory as fast as PCIe drains it, and copying
// out of the mapping instead pays a page fault per 4 KiB that does not scale with threads.
void parallel_read(const safetensors::SafetensorsFile& file, const safetensors::TensorEntry& entry,
                   std::uint64_t offset, void* dst, std::size_t bytes);

}  // namespace oomlab::scenarios::weights7b
