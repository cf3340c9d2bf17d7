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

// memcpy split across a few threads: one core cannot copy from the page cache into pinned
// memory as fast as PCIe/NVLink-C2C drains it. (pread() by 16 threads into the pinned slot
// instead measured 10 % slower on the H200: 20.3 vs 22.5 GB/s for the f32 7B file.)
void parallel_memcpy(void* dst, const void* src, std::size_t bytes);

}  // namespace oomlab::scenarios::weights7b
