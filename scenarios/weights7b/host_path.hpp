// How a streamed load's chunks get from the mapped checkpoint to the device. The loader talks to
// one interface (ChunkUploader), so which host path it uses is one line: kLoaderHostPath in
// weight_loader.hpp. scenarios/weights7b/bench/host_path_bench.cpp measures the candidates.
//
//   staged_copy: a team of every core memcpys each chunk from the mmap into a pinned two-slot
//     ring and the DMA engine reads the ring. Costs a CPU copy of every byte and the page faults
//     of the fresh mapping; on the H200 machine (16 cores, host_path_bench, 13.5 GB file, warm)
//     50 GB/s end to end against a 55 GB/s pinned H2D limit (8 threads started per chunk: 27).
//   registered_windows: windows of the mapping are page-locked in place (cudaHostRegister,
//     read-only: the mapping is PROT_READ) by a worker thread a few windows ahead of the copies,
//     and the DMA engine reads the page cache itself; a second worker unregisters each window once
//     the copies out of it have finished. No CPU copy and no staging ring; the cost moves to
//     registration (pinning the pages), which runs in parallel with the copies. Measured on the
//     same machine: 17.6-19.5 GB/s (64/256 MiB windows, 1-4 ahead): pinning page-cache pages
//     costs 0.03-0.09 s per GB, more than the staged copy; kept as the measured alternative.
//
// On host devices the windows are not registered (there is nothing to DMA) but the same threads
// and hand-overs run, and copies read the mapping directly; on dry nothing is copied.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "harness/device/device.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::scenarios::weights7b {

enum class HostPath { staged_copy, registered_windows };
const char* host_path_name(HostPath path);

struct HostPathConfig {
  HostPath path = HostPath::staged_copy;
  std::size_t window_bytes = 256 * MiB;  // registered_windows: one registration (whole pages)
  std::size_t windows_ahead = 3;         // registered_windows: most windows registered at once
};

// Where the host side of a load spends its time (seconds). The loader thread's: copying file
// bytes into pinned memory and waiting for a pinned slot or a window's registration. The worker
// threads': registering and unregistering windows (in parallel with the copies).
struct HostPathTimes {
  double host_copy = 0;
  double wait = 0;
  double register_windows = 0;
  double unregister_windows = 0;
};

class ChunkUploader {
 public:
  virtual ~ChunkUploader() = default;
  // Queues the copy of file bytes [src, src + bytes) to `device_dst` on the copy stream. Chunks
  // must come in increasing file order. `src` is nullptr on dry (nothing is copied).
  virtual void upload(void* device_dst, const std::uint8_t* src, std::size_t bytes) = 0;
  // After the last upload: waits until no copy still reads host memory the uploader holds and
  // releases it (unregisters every window). Throws the first worker error.
  virtual void finish() = 0;
  virtual std::size_t host_staging_bytes() const = 0;  // the pinned ring (0 for windows)
  virtual std::size_t registered_bytes() const = 0;    // most bytes registered at once
  const HostPathTimes& times() const { return times_; }

 protected:
  HostPathTimes times_;
};

// `file_begin`/`file_end`: the mapped bytes every chunk comes from (null on dry). Throws
// std::invalid_argument for a window that is not a positive multiple of 4 KiB or no window
// ahead, and std::runtime_error when the GPU cannot register read-only host memory.
std::unique_ptr<ChunkUploader> make_chunk_uploader(Device& device, memory::StreamHandle copy_stream,
                                                   const HostPathConfig& config, std::size_t chunk_bytes,
                                                   const std::uint8_t* file_begin, const std::uint8_t* file_end);

}  // namespace oomlab::scenarios::weights7b
