#include "scenarios/weights7b/pinned_stager.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "harness/device/stream_event.hpp"
#include "harness/memory/size.hpp"
#include "harness/parallel/thread_team.hpp"

#if OOMLAB_WITH_CUDA
#include <cuda_runtime_api.h>

#include "harness/memory/cuda_check.hpp"
#endif

namespace oomlab::scenarios::weights7b {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int current_cuda_device(const Device& device) {
  int index = 0;
#if OOMLAB_WITH_CUDA
  if (device.is_cuda()) OOMLAB_CUDA_CHECK(cudaGetDevice(&index));
#else
  (void)device;
#endif
  return index;
}

void make_current(const Device& device, int index) {
#if OOMLAB_WITH_CUDA
  if (device.is_cuda()) OOMLAB_CUDA_CHECK(cudaSetDevice(index));
#else
  (void)device, (void)index;
#endif
}

// The ring's memory: one anonymous mapping on transparent huge pages, first touched by the team,
// then page-locked for DMA with cudaHostRegister (on cuda; plain memory on host; none on dry).
// Measured on the H200 machine for 48 MiB (results/h200-history/ring_setup-probe.cu and its log):
// cudaHostAlloc 20-26 ms and cudaFreeHost 5 ms; this 3.6-4.2 ms and 1.1 ms (with 4 KiB pages
// instead of huge ones: 8-26 ms).
class RingMemory {
 public:
  RingMemory(const Device& device, std::size_t bytes, ThreadTeam& team) {
    if (device.is_dry()) return;
    mapped_bytes_ = bytes + kHugePage;  // room to start on a huge-page boundary
    void* mapped = ::mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED)
      throw std::runtime_error("pinned staging ring: mmap of " + std::to_string(bytes) + " bytes failed");
    mapped_ = static_cast<std::uint8_t*>(mapped);
    data_ = mapped_ + (kHugePage - reinterpret_cast<std::uintptr_t>(mapped_) % kHugePage) % kHugePage;
    ::madvise(data_, bytes, MADV_HUGEPAGE);  // a hint: without huge pages it is only slower
    team.run([&](std::size_t t) {
      const std::size_t piece = (bytes + team.size() - 1) / team.size();
      const std::size_t begin = std::min(bytes, t * piece), end = std::min(bytes, begin + piece);
      std::memset(data_ + begin, 0, end - begin);
    });
#if OOMLAB_WITH_CUDA
    if (device.is_cuda()) {
      const cudaError_t status = cudaHostRegister(data_, bytes, cudaHostRegisterDefault);
      if (status != cudaSuccess) {
        ::munmap(mapped_, mapped_bytes_);
        throw std::runtime_error(std::string("pinned staging ring: cudaHostRegister: ") + cudaGetErrorString(status));
      }
      registered_ = true;
    }
#endif
  }
  ~RingMemory() {
#if OOMLAB_WITH_CUDA
    if (registered_) cudaHostUnregister(data_);
#endif
    if (mapped_) ::munmap(mapped_, mapped_bytes_);
  }
  RingMemory(const RingMemory&) = delete;
  RingMemory& operator=(const RingMemory&) = delete;
  std::uint8_t* data() const { return data_; }  // nullptr on dry

 private:
  static constexpr std::size_t kHugePage = 2 * MiB;
  std::uint8_t* mapped_ = nullptr;
  std::size_t mapped_bytes_ = 0;
  std::uint8_t* data_ = nullptr;
  bool registered_ = false;
};

// The slots and, per slot, an event after the last DMA that read it. Destroyed only once those
// DMAs are done, also when the stager fails part way.
struct Ring {
  Ring(const Device& device, std::size_t slot_bytes, std::size_t slots, ThreadTeam& team)
      : memory(device, slot_bytes * slots, team), slot_bytes(slot_bytes) {
    drained.reserve(slots);
    for (std::size_t i = 0; i < slots; ++i) drained.emplace_back(device.kind());
  }
  ~Ring() {
    try {
      wait_for_all();
    } catch (...) {
      // After a device error the context is unusable anyway; nothing more to release safely.
    }
  }
  void wait_for_all() const {
    for (const StreamEvent& event : drained) event.synchronize();
  }
  std::uint8_t* slot(std::size_t i) const { return memory.data() + i * slot_bytes; }

  RingMemory memory;
  std::size_t slot_bytes;
  std::vector<StreamEvent> drained;
};

}  // namespace

PinnedStager::PinnedStager(Device& device, memory::StreamHandle copy_stream, RingShape ring)
    : device_(device),
      copy_stream_(copy_stream),
      slot_bytes_(ring.slot_bytes),
      slots_(ring.slots),
      cuda_device_(current_cuda_device(device)) {
  if (slots_ < 2 || slot_bytes_ == 0) {
    throw std::invalid_argument("pinned staging ring: needs at least 2 slots of at least 1 byte (got " +
                                std::to_string(slots_) + " of " + std::to_string(slot_bytes_) + " bytes)");
  }
  thread_ = std::thread([this] { stage(); });
}

PinnedStager::~PinnedStager() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.clear();
    finishing_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void PinnedStager::upload(void* device_dst, const std::uint8_t* src, std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    throw_if_failed();
    if (finishing_) throw std::logic_error("pinned staging ring: upload after finish()");
    queue_.push_back(Copy{device_dst, src, bytes});
  }
  changed_.notify_all();
}

void PinnedStager::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  wait_until_idle(lock);
  throw_if_failed();
}

void PinnedStager::finish() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finishing_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  throw_if_failed();
}

void PinnedStager::wait_until_idle(std::unique_lock<std::mutex>& lock) {
  changed_.wait(lock, [&] { return stopped_ || (queue_.empty() && !busy_); });
}

void PinnedStager::throw_if_failed() const {
  if (!error_.empty()) throw std::runtime_error("pinned staging ring: " + error_);
}

void PinnedStager::stage() {
  std::string failure;
  try {
    make_current(device_, cuda_device_);
    const auto setup_start = Clock::now();
    auto team = std::make_unique<ThreadTeam>();  // every core
    auto ring = std::make_unique<Ring>(device_, slot_bytes_, slots_, *team);
    times_.setup = seconds_since(setup_start);

    std::size_t slot = 0, fill = 0;  // the slot being filled and its bytes so far
    for (;;) {
      Copy copy{};
      {
        std::unique_lock<std::mutex> lock(mutex_);
        busy_ = false;
        changed_.notify_all();
        changed_.wait(lock, [&] { return !queue_.empty() || finishing_; });
        if (queue_.empty()) break;  // finishing, and every copy is on the stream
        copy = queue_.front();
        queue_.pop_front();
        busy_ = true;
      }
      auto* dst = static_cast<std::uint8_t*>(copy.dst);
      while (copy.bytes > 0) {
        if (fill == slot_bytes_) {  // next slot, once the DMA that last read it is done
          ring->drained[slot].record(copy_stream_);
          slot = (slot + 1) % slots_;
          const auto wait_start = Clock::now();
          ring->drained[slot].synchronize();
          times_.wait += seconds_since(wait_start);
          fill = 0;
        }
        const std::size_t piece = std::min(copy.bytes, slot_bytes_ - fill);
        std::uint8_t* staged = nullptr;  // dry: nothing is read or copied
        if (copy.src) {
          staged = ring->slot(slot) + fill;
          const auto copy_start = Clock::now();
          team->copy(staged, copy.src, piece);
          times_.host_copy += seconds_since(copy_start);
          copy.src += piece;
        }
        device_.copy_async(dst, staged, piece, CopyKind::host_to_device, copy_stream_);
        dst += piece;
        fill += piece;
        copy.bytes -= piece;
      }
    }
    ring->drained[slot].record(copy_stream_);
    const auto release_start = Clock::now();
    ring->wait_for_all();  // (timed as part of the release: the last DMA's tail)
    ring.reset();
    team.reset();
    times_.release = seconds_since(release_start);
  } catch (const std::exception& error) {
    failure = error.what();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure.empty()) error_ = failure;
  stopped_ = true;
  busy_ = false;
  changed_.notify_all();
}

}  // namespace oomlab::scenarios::weights7b
