// How a streamed load's bytes get from the mapped checkpoint to the device: a stager thread owns
// a pinned ring of slots and a team of every core; the loader thread hands it copies
// (device destination, file bytes) and goes on allocating the next weights meanwhile. The stager
// packs the copies into the ring back to back (a tiny norm weight shares a slot with the matrix
// after it instead of taking a slot of its own) and queues each piece's DMA on the copy stream
// as soon as the team has copied it into pinned memory; it moves to the next slot when one is
// full, waiting only for the DMA that last read that slot.
//
// Why, measured on the H200 machine (16 cores, 13.5 GB bf16 llama-7b file, warm page cache):
//   - one core copies from the page cache at ~4 GB/s; a team of every core at ~50 GB/s, against a
//     55 GB/s pinned H2D limit (scenarios/weights7b/bench/host_path_bench; the same bench measured
//     page-locking the mapping in place with cudaHostRegister at 18-19 GB/s: slower than copying);
//   - with one slot per upload, every 8 KiB norm weight (two per layer) took a slot and made the
//     next matrix wait for the DMA before it: 0.099 s of slot waits in a 0.52 s load (a510014);
//   - making the pinned ring and the team (0.066 s) and allocating the weights (0.049 s) ran
//     before and between the copies on the loader thread; here both overlap them.
//   - the ring's shape (load_bench, 1ff8490, best of 3 loads): 2 x 64 MiB 38.7 GB/s, 3 x 64 25.8,
//     2 x 32 43.5, 3 x 16 42.9, 4 x 16 42.9, 2 x 16 38.7; 8 MiB slots 24-27 (db91234). The
//     team's copy into a small ring is faster (0.23 s against 0.27-0.38 s for 128-256 MiB rings:
//     the ring stays in the CPU's cache); two 16 MiB slots are too few to hide the DMA (0.03-0.06
//     s of slot waits). Over three runs on three machines 2 x 32 MiB was best on average (mean of
//     the bests 40.5 GB/s, 3 x 16 MiB 38.9). With the team copying in blocks taken in turn
//     (ThreadTeam::copy) the copy varies less and the scenario loads at 50 GB/s (2efe4a7).
//   - the ring's memory: cudaHostAlloc took ~0.5 ms per MiB (and held up the weight allocations
//     meanwhile); an anonymous mapping on huge pages, touched by the team and then registered,
//     takes a fifth of that (pinned_stager.cpp).
//
// On host devices "DMA" is a memcpy and events are inert; on dry nothing is read or copied (the
// ring has no memory), so the stager only runs the same sequence.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "harness/device/device.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::scenarios::weights7b {

// Where the stager thread's time goes (seconds), valid after finish().
struct StagerTimes {
  double setup = 0;      // making the pinned ring and the thread team
  double host_copy = 0;  // copying file bytes into the ring (the whole team)
  double wait = 0;       // waiting for the DMA that last read a slot
  double release = 0;    // freeing the ring and the team
};

struct RingShape {
  std::size_t slot_bytes;
  std::size_t slots;
};
inline constexpr RingShape kDefaultRing{32 * MiB, 2};  // see the measurements above

class PinnedStager {
 public:
  // Throws std::invalid_argument for fewer than two slots or empty ones.
  PinnedStager(Device& device, memory::StreamHandle copy_stream, RingShape ring);
  // Without finish() (the loader failed): drops queued copies, waits for the ones in flight.
  ~PinnedStager();
  PinnedStager(const PinnedStager&) = delete;
  PinnedStager& operator=(const PinnedStager&) = delete;

  // Queues the copy of file bytes [src, src + bytes) to `device_dst` (nullptr src on dry) and
  // returns at once. Throws the stager's error, if it has failed.
  void upload(void* device_dst, const std::uint8_t* src, std::size_t bytes);
  // Returns once every queued copy's DMA is on the copy stream, so work the caller queues on that
  // stream next comes after them.
  void flush();
  // flush(), then waits until no DMA reads the ring and releases ring and team. Throws the
  // stager's first error.
  void finish();

  std::size_t host_staging_bytes() const { return slot_bytes_ * slots_; }
  const StagerTimes& times() const { return times_; }

 private:
  struct Copy {
    void* dst;
    const std::uint8_t* src;
    std::size_t bytes;
  };
  void stage();  // the stager thread
  void wait_until_idle(std::unique_lock<std::mutex>& lock);
  void throw_if_failed() const;

  Device& device_;
  const memory::StreamHandle copy_stream_;
  const std::size_t slot_bytes_, slots_;
  const int cuda_device_;  // the loader thread's current GPU, made current on the stager thread
  StagerTimes times_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Copy> queue_;
  bool busy_ = false;      // the stager is working on a copy taken off the queue
  bool finishing_ = false; // no more copies: drain, release, stop
  bool stopped_ = false;   // the stager thread has released everything
  std::string error_;
  std::thread thread_;
};

}  // namespace oomlab::scenarios::weights7b
