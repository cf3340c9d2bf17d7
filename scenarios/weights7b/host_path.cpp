#include "scenarios/weights7b/host_path.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/device/host_buffer.hpp"
#include "harness/device/stream_event.hpp"
#include "harness/parallel/thread_team.hpp"

#if OOMLAB_WITH_CUDA
#include <cuda_runtime_api.h>

#include "harness/device/cuda_check.hpp"
#endif

namespace oomlab::scenarios::weights7b {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
constexpr std::size_t kPage = 4096;

// CPU copy into a pinned two-slot ring; the copy stream reads the ring.
class StagedCopyUploader final : public ChunkUploader {
 public:
  StagedCopyUploader(Device& device, memory::StreamHandle copy_stream, std::size_t chunk_bytes)
      : device_(device),
        copy_stream_(copy_stream),
        slots_{HostBuffer(device.kind(), chunk_bytes), HostBuffer(device.kind(), chunk_bytes)},
        copied_{StreamEvent(device.kind()), StreamEvent(device.kind())} {}
  ~StagedCopyUploader() override {
    try {
      finish();
    } catch (...) {
      // After a device error the context is unusable anyway; nothing more to release safely.
    }
  }

  void upload(void* device_dst, const std::uint8_t* src, std::size_t bytes) override {
    const std::size_t slot = next_slot_++ % 2;
    const auto wait_start = Clock::now();
    copied_[slot].synchronize();  // the copy that last read this slot is done
    const auto copy_start = Clock::now();
    if (src) team_.copy(slots_[slot].data(), src, bytes);
    times_.wait += std::chrono::duration<double>(copy_start - wait_start).count();
    times_.host_copy += seconds_since(copy_start);
    device_.copy_async(device_dst, slots_[slot].data(), bytes, CopyKind::host_to_device, copy_stream_);
    copied_[slot].record(copy_stream_);
  }
  void finish() override {
    for (const StreamEvent& event : copied_) event.synchronize();
  }
  std::size_t host_staging_bytes() const override { return slots_[0].bytes() + slots_[1].bytes(); }
  std::size_t registered_bytes() const override { return 0; }

 private:
  Device& device_;
  memory::StreamHandle copy_stream_;
  HostBuffer slots_[2];  // pinned on cuda
  StreamEvent copied_[2];
  ThreadTeam team_;      // every core: one core copies from the page cache at ~4 GB/s
  std::size_t next_slot_ = 0;
};

// Page-locks [p, p + n) for DMA on cuda; nothing to do elsewhere.
void register_window(const Device& device, std::uint8_t* p, std::size_t n) {
#if OOMLAB_WITH_CUDA
  if (device.is_cuda()) OOMLAB_CUDA_CHECK(cudaHostRegister(p, n, cudaHostRegisterReadOnly));
#else
  (void)device, (void)p, (void)n;
#endif
}
void unregister_window(const Device& device, std::uint8_t* p) {
#if OOMLAB_WITH_CUDA
  if (device.is_cuda()) OOMLAB_CUDA_CHECK(cudaHostUnregister(p));
#else
  (void)device, (void)p;
#endif
}
void require_read_only_registration(const Device& device) {
#if OOMLAB_WITH_CUDA
  if (!device.is_cuda()) return;
  int device_index = 0, supported = 0;
  OOMLAB_CUDA_CHECK(cudaGetDevice(&device_index));
  OOMLAB_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrHostRegisterReadOnlySupported, device_index));
  if (!supported) {
    throw std::runtime_error("registered_windows host path: this GPU cannot register read-only host memory "
                             "(cudaDevAttrHostRegisterReadOnlySupported is 0); use staged_copy");
  }
#else
  (void)device;
#endif
}

// The mapping split into windows on a page grid. A registrar thread registers window k once
// fewer than `ahead` windows are held; the loader thread copies out of registered windows in
// file order and, when it moves past a window, records an event after its last copy; a
// releaser thread waits for that event and unregisters the window.
class RegisteredWindowsUploader final : public ChunkUploader {
 public:
  RegisteredWindowsUploader(Device& device, memory::StreamHandle copy_stream, const HostPathConfig& config,
                            const std::uint8_t* file_begin, const std::uint8_t* file_end)
      : device_(device), copy_stream_(copy_stream), window_bytes_(config.window_bytes), ahead_(config.windows_ahead) {
    if (window_bytes_ == 0 || window_bytes_ % kPage != 0 || ahead_ == 0) {
      throw std::invalid_argument("registered_windows: a window must be a positive multiple of 4 KiB and at least "
                                  "one window must be registered ahead (got " + std::to_string(window_bytes_) +
                                  " bytes, " + std::to_string(ahead_) + " ahead)");
    }
    if (!file_begin) return;  // dry: no bytes, no windows
    require_read_only_registration(device);
    // The mapping itself starts on a page, so rounding down stays inside it.
    base_ = const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(
        reinterpret_cast<std::uintptr_t>(file_begin) / kPage * kPage));
    end_ = file_end;
    windows_ = (static_cast<std::size_t>(end_ - base_) + window_bytes_ - 1) / window_bytes_;
    retired_.reserve(windows_);
    for (std::size_t k = 0; k < windows_; ++k) retired_.emplace_back(device.kind());
    registrar_ = std::thread([this] { register_ahead(); });
    releaser_ = std::thread([this] { release_behind(); });
  }
  ~RegisteredWindowsUploader() override {
    try {
      finish();
    } catch (...) {
      // Reported by finish() when the load itself did not fail first.
    }
  }

  void upload(void* device_dst, const std::uint8_t* src, std::size_t bytes) override {
    if (!src) {  // dry
      device_.copy_async(device_dst, src, bytes, CopyKind::host_to_device, copy_stream_);
      return;
    }
    if (src < next_src_ || src < base_ || src + bytes > end_) {
      throw std::logic_error("registered_windows: chunks must come in file order from inside the mapping");
    }
    next_src_ = src + bytes;
    auto* dst = static_cast<std::uint8_t*>(device_dst);
    while (bytes > 0) {  // one copy per window the chunk touches
      const std::size_t k = static_cast<std::size_t>(src - base_) / window_bytes_;
      retire_windows_before(k);
      wait_until_registered(k);
      const std::size_t piece = std::min<std::size_t>(bytes, window(k) + window_length(k) - src);
      device_.copy_async(dst, src, piece, CopyKind::host_to_device, copy_stream_);
      src += piece, dst += piece, bytes -= piece;
    }
  }

  void finish() override {
    if (registrar_.joinable()) {
      retire_windows_before(windows_);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
      }
      changed_.notify_all();
      registrar_.join();
      releaser_.join();
    }
    if (!error_.empty()) throw std::runtime_error("registered_windows: " + error_);
  }
  std::size_t host_staging_bytes() const override { return 0; }
  std::size_t registered_bytes() const override { return base_ ? std::min(windows_, ahead_) * window_bytes_ : 0; }

 private:
  std::uint8_t* window(std::size_t k) const { return base_ + k * window_bytes_; }
  std::size_t window_length(std::size_t k) const {
    return std::min<std::size_t>(window_bytes_, static_cast<std::size_t>(end_ - window(k)));
  }

  // Windows before k will not be read again: mark the end of their copies for the releaser.
  void retire_windows_before(std::size_t k) {
    if (k <= retired_count_) return;
    for (std::size_t w = retired_count_; w < k; ++w) retired_[w].record(copy_stream_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      retired_count_ = k;
    }
    changed_.notify_all();
  }

  void wait_until_registered(std::size_t k) {
    const auto start = Clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return registered_count_ > k || !error_.empty(); });
    if (!error_.empty()) throw std::runtime_error("registered_windows: " + error_);
    times_.wait += seconds_since(start);
  }

  void register_ahead() {
    for (std::size_t k = 0; k < windows_; ++k) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return k < released_count_ + ahead_ || stopping_; });
        if (stopping_) break;  // the loader is done: it never needs window k
      }
      const auto start = Clock::now();
      std::string failure;
      try {
        register_window(device_, window(k), window_length(k));
      } catch (const std::exception& error) {
        failure = error.what();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failure.empty()) {
        error_ = failure;
        break;
      }
      times_.register_windows += seconds_since(start);
      ++registered_count_;
      changed_.notify_all();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    registrar_done_ = true;
    changed_.notify_all();
  }

  // Unregisters windows in order once their copies are done; after the registrar has stopped
  // (the load finished or failed), every window it registered is still released.
  void release_behind() {
    for (std::size_t k = 0; k < windows_; ++k) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] {
          return (k < retired_count_ && k < registered_count_) || (registrar_done_ && k >= registered_count_);
        });
        if (k >= registered_count_) return;
      }
      std::string failure;
      try {
        retired_[k].synchronize();  // every copy out of window k has finished
        const auto start = Clock::now();
        unregister_window(device_, window(k));
        std::lock_guard<std::mutex> lock(mutex_);
        times_.unregister_windows += seconds_since(start);
      } catch (const std::exception& error) {
        failure = error.what();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failure.empty() && error_.empty()) error_ = failure;
      ++released_count_;
      changed_.notify_all();
    }
  }

  Device& device_;
  memory::StreamHandle copy_stream_;
  std::size_t window_bytes_, ahead_;
  std::uint8_t* base_ = nullptr;
  const std::uint8_t* end_ = nullptr;
  const std::uint8_t* next_src_ = nullptr;
  std::size_t windows_ = 0;
  std::vector<StreamEvent> retired_;  // recorded after the last copy out of window k

  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t registered_count_ = 0;  // windows [0, n) registered (in order)
  std::size_t retired_count_ = 0;     // windows [0, n) no longer read by new copies
  std::size_t released_count_ = 0;    // windows [0, n) unregistered
  bool stopping_ = false;        // finish(): the loader reads no more windows
  bool registrar_done_ = false;
  std::string error_;
  std::thread registrar_, releaser_;
};

}  // namespace

const char* host_path_name(HostPath path) {
  return path == HostPath::staged_copy ? "staged_copy" : "registered_windows";
}

std::unique_ptr<ChunkUploader> make_chunk_uploader(Device& device, memory::StreamHandle copy_stream,
                                                   const HostPathConfig& config, std::size_t chunk_bytes,
                                                   const std::uint8_t* file_begin, const std::uint8_t* file_end) {
  if (config.path == HostPath::registered_windows) {
    return std::make_unique<RegisteredWindowsUploader>(device, copy_stream, config, file_begin, file_end);
  }
  return std::make_unique<StagedCopyUploader>(device, copy_stream, chunk_bytes);
}

}  // namespace oomlab::scenarios::weights7b
