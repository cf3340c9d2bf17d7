// host_path_bench: how fast can a warm checkpoint file get from the page cache onto the GPU?
//
// The weights7b loader moves a 13.5 GB bf16 file at 16 GB/s on the H200, and its own timers say
// the host memcpy out of the mmap (into the pinned staging ring) is what it waits for. This
// program measures the candidate host paths side by side, end to end: from open()+mmap() of the
// file to the last byte on the device (mapping, populating, registering, unregistering and
// munmap all inside the timed region). Every pass maps the file afresh (cold page tables, as a
// real load), the file's pages stay warm in the page cache, and each pass is checked by reading
// sampled 4 KiB blocks back from the device.
//
//   host_path_bench --file /tmp/w.bin [--gigabytes 13.48] [--json out.json] [--repeats 2]
//                   [--only SUBSTRING] [--threads N]
//
// A missing file is created (pseudo-random, non-zero words, written by every core) and read once
// so it is resident. GB/s are of file bytes (1 GB = 1e9 B), best of the repeats.
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/memory/cuda_check.hpp"
#include "harness/memory/size.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/parallel/thread_team.hpp"

namespace {

using oomlab::ThreadTeam;

using Clock = std::chrono::steady_clock;
using oomlab::MiB;
constexpr std::size_t kPage = 4096;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

[[noreturn]] void fail_errno(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// ---------------------------------------------------------------------------------------------
// The file: created fast when missing, then made resident.

void create_file(const std::string& path, std::size_t bytes, std::size_t threads) {
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno("cannot create " + temp);
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) fail_errno("ftruncate " + temp);
  constexpr std::size_t kBlock = 8 * MiB;
  const std::size_t blocks = (bytes + kBlock - 1) / kBlock;
  std::atomic<bool> failed{false};
  ThreadTeam(threads).run([&](std::size_t t) {
    std::vector<std::uint64_t> buffer(kBlock / 8);
    for (std::size_t b = t; b < blocks && !failed; b += threads) {
      for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = splitmix64(b * buffer.size() + i) | 1;
      const std::size_t offset = b * kBlock, n = std::min(kBlock, bytes - offset);
      if (::pwrite(fd, buffer.data(), n, static_cast<off_t>(offset)) != static_cast<ssize_t>(n)) failed = true;
    }
  });
  ::close(fd);
  if (failed) {
    ::unlink(temp.c_str());
    throw std::runtime_error("writing " + temp + " failed");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) fail_errno("rename " + temp);
}

// Reads the whole file once (pread by every core) and returns the fraction resident (mincore).
double make_resident(const std::string& path, std::size_t bytes, std::size_t threads) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno("open " + path);
  constexpr std::size_t kBlock = 8 * MiB;
  const std::size_t blocks = (bytes + kBlock - 1) / kBlock;
  ThreadTeam(threads).run([&](std::size_t t) {
    std::vector<char> buffer(kBlock);
    for (std::size_t b = t; b < blocks; b += threads) {
      if (::pread(fd, buffer.data(), kBlock, static_cast<off_t>(b * kBlock)) < 0) return;
    }
  });
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  double resident = 0;
  if (map != MAP_FAILED) {
    std::vector<unsigned char> pages((bytes + kPage - 1) / kPage);
    if (::mincore(map, bytes, pages.data()) == 0) {
      std::size_t in = 0;
      for (unsigned char page : pages) in += page & 1;
      resident = static_cast<double>(in) / static_cast<double>(pages.size());
    }
    ::munmap(map, bytes);
  }
  ::close(fd);
  return resident;
}

// ---------------------------------------------------------------------------------------------
// One mapping of the file, as the loader makes it (PROT_READ, MAP_SHARED), plus the candidate
// kernel hints. Unmapped and closed by the destructor (inside the timed region).

enum class MapHint { none, map_populate, sequential_willneed, hugepage };

struct FileMapping {
  FileMapping(const std::string& path, std::size_t bytes, MapHint hint) : bytes(bytes) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail_errno("open " + path);
    const int flags = MAP_SHARED | (hint == MapHint::map_populate ? MAP_POPULATE : 0);
    void* map = ::mmap(nullptr, bytes, PROT_READ, flags, fd, 0);
    if (map == MAP_FAILED) fail_errno("mmap " + path);
    data = static_cast<const std::uint8_t*>(map);
    if (hint == MapHint::sequential_willneed) {
      ::madvise(map, bytes, MADV_SEQUENTIAL);
      ::madvise(map, bytes, MADV_WILLNEED);
    }
    if (hint == MapHint::hugepage) ::madvise(map, bytes, MADV_HUGEPAGE);
  }
  ~FileMapping() {
    ::munmap(const_cast<std::uint8_t*>(data), bytes);
    ::close(fd);
  }
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;

  int fd = -1;
  const std::uint8_t* data = nullptr;
  std::size_t bytes = 0;
};

// Fills the page tables of [p, p + n) without copying (MADV_POPULATE_READ, Linux 5.14+; touching
// one byte per page where it is missing).
void populate_page_tables(const std::uint8_t* p, std::size_t n) {
  const auto begin = reinterpret_cast<std::uintptr_t>(p) / kPage * kPage;
  const auto end = reinterpret_cast<std::uintptr_t>(p + n);
#ifdef MADV_POPULATE_READ
  if (::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0) return;
#endif
  volatile std::uint8_t sink = 0;
  for (std::uintptr_t a = begin; a < end; a += kPage) sink = sink + *reinterpret_cast<const std::uint8_t*>(a);
}

// ---------------------------------------------------------------------------------------------
// CPU copies into pinned memory.

using CopyFn = void (*)(void* dst, const void* src, std::size_t bytes);

void plain_memcpy(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }

// Non-temporal (streaming) stores: the destination lines are not read first nor kept in cache,
// which saves a third of the memory traffic of a copy whose target the CPU never reads again.
void streaming_copy(void* dst, const void* src, std::size_t bytes) {
#if defined(__x86_64__)
  auto* d = static_cast<std::uint8_t*>(dst);
  const auto* s = static_cast<const std::uint8_t*>(src);
  const bool aligned = (reinterpret_cast<std::uintptr_t>(d) % 16 == 0) &&
                       (reinterpret_cast<std::uintptr_t>(s) % 16 == 0);
  std::size_t done = 0;
  if (aligned) {
    for (; done + 64 <= bytes; done += 64) {
      const __m128i a = _mm_load_si128(reinterpret_cast<const __m128i*>(s + done));
      const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(s + done + 16));
      const __m128i c = _mm_load_si128(reinterpret_cast<const __m128i*>(s + done + 32));
      const __m128i e = _mm_load_si128(reinterpret_cast<const __m128i*>(s + done + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + done), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + done + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + done + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + done + 48), e);
    }
    _mm_sfence();
  }
  std::memcpy(d + done, s + done, bytes - done);
#else
  std::memcpy(dst, src, bytes);
#endif
}


// ---------------------------------------------------------------------------------------------
// The device side shared by every strategy.

struct Target {
  std::uint8_t* device = nullptr;
  std::size_t device_bytes = 0;  // the whole file when it fits, else a ring (then not verified)
  std::uint8_t* at(std::size_t file_offset) const { return device + file_offset % device_bytes; }
  bool whole_file = false;
};

struct PassResult {
  double seconds = 0;
  std::map<std::string, double> extra;  // strategy-specific timings (seconds) and counts
};

struct Setup {
  std::string path;
  std::size_t bytes = 0;
  std::size_t cores = 1;
  Target target;
};

struct PinnedSlot {
  explicit PinnedSlot(std::size_t bytes) {
    OOMLAB_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&data), bytes, cudaHostAllocDefault));
    OOMLAB_CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  }
  ~PinnedSlot() {
    cudaEventDestroy(copied);
    cudaFreeHost(data);
  }
  PinnedSlot(const PinnedSlot&) = delete;
  PinnedSlot& operator=(const PinnedSlot&) = delete;
  std::uint8_t* data = nullptr;
  cudaEvent_t copied{};
};

struct Stream {
  Stream() { OOMLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(handle); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t handle{};
};

// (a) The link itself: 64 MiB copies out of one pinned buffer, no file at all.
PassResult pinned_h2d_limit(const Setup& setup) {
  constexpr std::size_t kChunk = 64 * MiB;
  PinnedSlot source(kChunk);
  std::memset(source.data, 0x5a, kChunk);
  Stream stream;
  const auto start = Clock::now();
  for (std::size_t offset = 0; offset < setup.bytes; offset += kChunk) {
    const std::size_t n = std::min(kChunk, setup.bytes - offset);
    OOMLAB_CUDA_CHECK(cudaMemcpyAsync(setup.target.at(offset), source.data, n, cudaMemcpyHostToDevice, stream.handle));
  }
  OOMLAB_CUDA_CHECK(cudaStreamSynchronize(stream.handle));
  return {seconds_since(start), {}};
}

// (b)/(c) The loader's shape: chunks in file order through `slots` pinned buffers on one copy
// stream; each chunk is filled by all copy threads together, then its H2D copy is queued.
struct StagedOptions {
  MapHint hint = MapHint::none;
  std::size_t chunk_bytes = 64 * MiB;
  std::size_t slots = 2;
  std::size_t threads = 8;
  CopyFn copy = plain_memcpy;
  bool loader_copy = false;  // the loader's own ThreadTeam::copy (every core)
  bool pread_instead_of_mmap = false;   // each thread pread()s its piece into the pinned slot
  std::size_t populate_helpers = 0;     // threads that fill page tables ahead of the copy
};

PassResult staged(const Setup& setup, const StagedOptions& options) {
  std::vector<std::unique_ptr<PinnedSlot>> slots;
  for (std::size_t i = 0; i < options.slots; ++i) slots.push_back(std::make_unique<PinnedSlot>(options.chunk_bytes));
  Stream stream;
  ThreadTeam team(options.loader_copy ? 0 : options.threads);
  double copy_seconds = 0, wait_seconds = 0, map_seconds = 0;

  const auto start = Clock::now();
  {
    FileMapping map(setup.path, setup.bytes, options.hint);
    map_seconds = seconds_since(start);
    std::atomic<bool> stop_helpers{false};
    std::vector<std::thread> helpers;
    for (std::size_t h = 0; h < options.populate_helpers; ++h) {
      helpers.emplace_back([&, h] {
        for (std::size_t offset = h * options.chunk_bytes; offset < setup.bytes && !stop_helpers;
             offset += options.populate_helpers * options.chunk_bytes) {
          populate_page_tables(map.data + offset, std::min(options.chunk_bytes, setup.bytes - offset));
        }
      });
    }
    std::size_t index = 0;
    for (std::size_t offset = 0; offset < setup.bytes; offset += options.chunk_bytes, ++index) {
      const std::size_t n = std::min(options.chunk_bytes, setup.bytes - offset);
      PinnedSlot& slot = *slots[index % slots.size()];
      const auto wait_start = Clock::now();
      OOMLAB_CUDA_CHECK(cudaEventSynchronize(slot.copied));
      const auto copy_start = Clock::now();
      wait_seconds += std::chrono::duration<double>(copy_start - wait_start).count();
      if (options.loader_copy) {
        team.copy(slot.data, map.data + offset, n);
      } else {
        const std::size_t piece = (n / team.size() + kPage - 1) / kPage * kPage;
        team.run([&](std::size_t t) {
          const std::size_t begin = std::min(n, t * piece), end = std::min(n, begin + piece);
          if (begin == end) return;
          if (options.pread_instead_of_mmap) {
            std::size_t done = begin;
            while (done < end) {
              const ssize_t got = ::pread(map.fd, slot.data + done, end - done, static_cast<off_t>(offset + done));
              if (got <= 0) break;
              done += static_cast<std::size_t>(got);
            }
          } else {
            options.copy(slot.data + begin, map.data + offset + begin, end - begin);
          }
        });
      }
      copy_seconds += seconds_since(copy_start);
      OOMLAB_CUDA_CHECK(cudaMemcpyAsync(setup.target.at(offset), slot.data, n, cudaMemcpyHostToDevice, stream.handle));
      OOMLAB_CUDA_CHECK(cudaEventRecord(slot.copied, stream.handle));
    }
    OOMLAB_CUDA_CHECK(cudaStreamSynchronize(stream.handle));
    stop_helpers = true;
    for (std::thread& helper : helpers) helper.join();
  }
  return {seconds_since(start), {{"map_seconds", map_seconds}, {"host_copy_seconds", copy_seconds},
                                 {"slot_wait_seconds", wait_seconds}}};
}

// (c) Per-thread pipelines: thread t owns chunks t, t+T, ..., two pinned slots and a stream, so
// threads never wait for each other (no per-chunk barrier).
PassResult per_thread_pipelines(const Setup& setup, std::size_t threads, std::size_t chunk_bytes, CopyFn copy) {
  std::vector<std::unique_ptr<PinnedSlot>> slots;
  std::vector<std::unique_ptr<Stream>> streams;
  for (std::size_t i = 0; i < 2 * threads; ++i) slots.push_back(std::make_unique<PinnedSlot>(chunk_bytes));
  for (std::size_t i = 0; i < threads; ++i) streams.push_back(std::make_unique<Stream>());
  const auto start = Clock::now();
  {
    FileMapping map(setup.path, setup.bytes, MapHint::none);
    ThreadTeam(threads).run([&](std::size_t t) {
      std::size_t local = 0;
      for (std::size_t offset = t * chunk_bytes; offset < setup.bytes; offset += threads * chunk_bytes, ++local) {
        const std::size_t n = std::min(chunk_bytes, setup.bytes - offset);
        PinnedSlot& slot = *slots[2 * t + local % 2];
        OOMLAB_CUDA_CHECK(cudaEventSynchronize(slot.copied));
        copy(slot.data, map.data + offset, n);
        OOMLAB_CUDA_CHECK(
            cudaMemcpyAsync(setup.target.at(offset), slot.data, n, cudaMemcpyHostToDevice, streams[t]->handle));
        OOMLAB_CUDA_CHECK(cudaEventRecord(slot.copied, streams[t]->handle));
      }
      OOMLAB_CUDA_CHECK(cudaStreamSynchronize(streams[t]->handle));
    });
  }
  return {seconds_since(start), {}};
}

// (d) No CPU copy: windows of the mapping are page-locked in place (cudaHostRegister, read-only:
// the mapping is PROT_READ) and the DMA engine reads the page cache directly. Registrar threads
// run at most `windows_ahead` windows ahead of the copies; an unregister thread releases each
// window once its copy's event has completed.
PassResult registered_windows(const Setup& setup, std::size_t window_bytes, std::size_t windows_ahead,
                              std::size_t registrars) {
  const std::size_t windows = (setup.bytes + window_bytes - 1) / window_bytes;
  std::vector<cudaEvent_t> copied(windows);
  for (cudaEvent_t& event : copied) OOMLAB_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  Stream stream;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<char> registered(windows, 0);
  std::size_t released = 0, issued = 0;
  std::atomic<double> register_seconds{0}, unregister_seconds{0};
  std::string error;
  double wait_seconds = 0;
  const auto add = [](std::atomic<double>& total, double value) {
    double old = total.load();
    while (!total.compare_exchange_weak(old, old + value)) {
    }
  };

  const auto start = Clock::now();
  {
    FileMapping map(setup.path, setup.bytes, MapHint::none);
    auto window_ptr = [&](std::size_t k) { return const_cast<std::uint8_t*>(map.data) + k * window_bytes; };
    auto window_len = [&](std::size_t k) { return std::min(window_bytes, setup.bytes - k * window_bytes); };
    std::vector<std::thread> threads;
    for (std::size_t r = 0; r < registrars; ++r) {
      threads.emplace_back([&, r] {
        for (std::size_t k = r; k < windows; k += registrars) {
          {
            std::unique_lock<std::mutex> lock(mutex);
            changed.wait(lock, [&] { return k < released + windows_ahead || !error.empty(); });
            if (!error.empty()) return;
          }
          const auto t0 = Clock::now();
          const cudaError_t status = cudaHostRegister(window_ptr(k), window_len(k), cudaHostRegisterReadOnly);
          add(register_seconds, seconds_since(t0));
          std::lock_guard<std::mutex> lock(mutex);
          if (status != cudaSuccess) {
            error = std::string("cudaHostRegister: ") + cudaGetErrorString(status);
          } else {
            registered[k] = 1;
          }
          changed.notify_all();
        }
      });
    }
    threads.emplace_back([&] {  // the unregister thread
      for (std::size_t k = 0; k < windows; ++k) {
        {
          std::unique_lock<std::mutex> lock(mutex);
          changed.wait(lock, [&] { return k < issued || !error.empty(); });
          if (k >= issued) return;
          if (!registered[k]) continue;  // after a failed registration: nothing to release
        }
        cudaEventSynchronize(copied[k]);
        const auto t0 = Clock::now();
        cudaHostUnregister(window_ptr(k));
        add(unregister_seconds, seconds_since(t0));
        std::lock_guard<std::mutex> lock(mutex);
        ++released;
        changed.notify_all();
      }
    });
    for (std::size_t k = 0; k < windows; ++k) {
      const auto wait_start = Clock::now();
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return registered[k] || !error.empty(); });
        if (!error.empty()) break;
      }
      wait_seconds += seconds_since(wait_start);
      OOMLAB_CUDA_CHECK(cudaMemcpyAsync(setup.target.at(k * window_bytes), window_ptr(k), window_len(k),
                                        cudaMemcpyHostToDevice, stream.handle));
      OOMLAB_CUDA_CHECK(cudaEventRecord(copied[k], stream.handle));
      std::lock_guard<std::mutex> lock(mutex);
      ++issued;
      changed.notify_all();
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!error.empty()) issued = windows;  // let the unregister thread drain and stop
      changed.notify_all();
    }
    for (std::thread& thread : threads) thread.join();
    OOMLAB_CUDA_CHECK(cudaStreamSynchronize(stream.handle));
  }
  const double seconds = seconds_since(start);
  for (cudaEvent_t event : copied) cudaEventDestroy(event);
  if (!error.empty()) throw std::runtime_error(error);
  const double gb = static_cast<double>(setup.bytes) / 1e9;
  return {seconds, {{"register_seconds", register_seconds.load()},
                    {"unregister_seconds", unregister_seconds.load()},
                    {"register_seconds_per_gb", register_seconds.load() / gb},
                    {"registration_wait_seconds", wait_seconds}}};
}

// (d) The whole mapping registered at once, then 64 MiB copies, then unregistered.
PassResult registered_whole_file(const Setup& setup) {
  constexpr std::size_t kChunk = 64 * MiB;
  Stream stream;
  double register_seconds = 0, unregister_seconds = 0;
  const auto start = Clock::now();
  {
    FileMapping map(setup.path, setup.bytes, MapHint::none);
    auto* base = const_cast<std::uint8_t*>(map.data);
    auto t0 = Clock::now();
    OOMLAB_CUDA_CHECK(cudaHostRegister(base, setup.bytes, cudaHostRegisterReadOnly));
    register_seconds = seconds_since(t0);
    for (std::size_t offset = 0; offset < setup.bytes; offset += kChunk) {
      OOMLAB_CUDA_CHECK(cudaMemcpyAsync(setup.target.at(offset), base + offset, std::min(kChunk, setup.bytes - offset),
                                        cudaMemcpyHostToDevice, stream.handle));
    }
    OOMLAB_CUDA_CHECK(cudaStreamSynchronize(stream.handle));
    t0 = Clock::now();
    OOMLAB_CUDA_CHECK(cudaHostUnregister(base));
    unregister_seconds = seconds_since(t0);
  }
  const double gb = static_cast<double>(setup.bytes) / 1e9;
  return {seconds_since(start), {{"register_seconds", register_seconds},
                                 {"unregister_seconds", unregister_seconds},
                                 {"register_seconds_per_gb", register_seconds / gb}}};
}

// (e) cudaMemcpyAsync straight from the pageable mapping (the driver stages it through its own
// pinned buffers); `threads` threads each with their own stream take chunks round robin.
PassResult pageable_h2d(const Setup& setup, std::size_t threads) {
  constexpr std::size_t kChunk = 64 * MiB;
  std::vector<std::unique_ptr<Stream>> streams;
  for (std::size_t i = 0; i < threads; ++i) streams.push_back(std::make_unique<Stream>());
  const auto start = Clock::now();
  {
    FileMapping map(setup.path, setup.bytes, MapHint::none);
    ThreadTeam(threads).run([&](std::size_t t) {
      for (std::size_t offset = t * kChunk; offset < setup.bytes; offset += threads * kChunk) {
        OOMLAB_CUDA_CHECK(cudaMemcpyAsync(setup.target.at(offset), map.data + offset,
                                          std::min(kChunk, setup.bytes - offset), cudaMemcpyHostToDevice,
                                          streams[t]->handle));
      }
      OOMLAB_CUDA_CHECK(cudaStreamSynchronize(streams[t]->handle));
    });
  }
  return {seconds_since(start), {}};
}

// Compares sampled 4 KiB blocks of the device copy with the file. "skipped" when the device
// holds only a ring (the file did not fit) or the strategy never read the file.
std::string verify(const Setup& setup) {
  if (!setup.target.whole_file) return "skipped";
  FileMapping map(setup.path, setup.bytes, MapHint::none);
  std::vector<std::uint8_t> block(kPage);
  for (std::uint64_t i = 0; i < 48; ++i) {
    const std::size_t blocks = setup.bytes / kPage;
    std::size_t offset = (i == 0 ? 0 : i == 1 ? blocks - 1 : splitmix64(i) % blocks) * kPage;
    const std::size_t n = std::min(kPage, setup.bytes - offset);
    OOMLAB_CUDA_CHECK(cudaMemcpy(block.data(), setup.target.device + offset, n, cudaMemcpyDeviceToHost));
    if (std::memcmp(block.data(), map.data + offset, n) != 0) return "MISMATCH at byte " + std::to_string(offset);
  }
  return "ok";
}

struct Strategy {
  std::string name;
  std::string group;  // a, b, c, d, e as in the brief
  std::string what;
  std::function<PassResult(const Setup&)> run;
  bool reads_file = true;
};

std::vector<Strategy> strategies(std::size_t cores) {
  const std::size_t loader_threads = std::min<std::size_t>(8, cores);
  std::vector<Strategy> list;
  auto add = [&](std::string name, std::string group, std::string what, std::function<PassResult(const Setup&)> run) {
    list.push_back({std::move(name), std::move(group), std::move(what), std::move(run), true});
  };
  auto staged_with = [](StagedOptions options) { return [options](const Setup& s) { return staged(s, options); }; };
  list.push_back({"pinned_h2d_limit", "a", "64 MiB cudaMemcpyAsync from one pinned buffer (no file)",
                  pinned_h2d_limit, false});
  {
    StagedOptions o;
    o.loader_copy = true;
    add("loader_current", "b",
        "the loader: weights7b::ThreadTeam::copy (every core, one team for the load) into 2x64 MiB pinned",
        staged_with(o));
  }
  StagedOptions base;
  base.threads = loader_threads;
  add("team8_memcpy", "c", "as the loader, but a persistent team of threads (no spawn per chunk)", staged_with(base));
  {
    StagedOptions o = base;
    o.hint = MapHint::map_populate;
    add("team8_map_populate", "c", "MAP_POPULATE at mmap (the populate is timed)", staged_with(o));
  }
  {
    StagedOptions o = base;
    o.hint = MapHint::sequential_willneed;
    add("team8_madv_seq_willneed", "c", "madvise(MADV_SEQUENTIAL + MADV_WILLNEED)", staged_with(o));
  }
  {
    StagedOptions o = base;
    o.hint = MapHint::hugepage;
    add("team8_madv_hugepage", "c", "madvise(MADV_HUGEPAGE) (only helps where the page cache has large folios)",
        staged_with(o));
  }
  {
    StagedOptions o = base;
    o.populate_helpers = 2;
    add("team8_populate_ahead2", "c", "2 helper threads MADV_POPULATE_READ chunks ahead of the copy", staged_with(o));
  }
  {
    StagedOptions o = base;
    o.copy = streaming_copy;
    add("team8_streaming_stores", "c", "SSE2 non-temporal stores into pinned memory", staged_with(o));
  }
  {
    StagedOptions o = base;
    o.threads = cores;
    add("team_all_memcpy", "c", "every core copies (threads = cores)", staged_with(o));
  }
  {
    StagedOptions o = base;
    o.threads = cores;
    o.copy = streaming_copy;
    add("team_all_streaming_stores", "c", "every core, non-temporal stores", staged_with(o));
  }
  {
    StagedOptions o = base;
    o.threads = cores;
    o.copy = streaming_copy;
    o.populate_helpers = 2;
    o.chunk_bytes = 32 * MiB;
    o.slots = 4;
    add("team_all_nt_populate_4x32MiB", "c", "every core, NT stores, 2 populate helpers, 4 slots of 32 MiB",
        staged_with(o));
  }
  {
    StagedOptions o = base;
    o.threads = cores;
    o.pread_instead_of_mmap = true;
    add("team_all_pread", "c", "pread() by every core into the pinned slot (no page tables)", staged_with(o));
  }
  add("per_thread_8x16MiB_memcpy", "c", "8 threads, each its own stream and 2x16 MiB pinned slots",
      [=](const Setup& s) { return per_thread_pipelines(s, loader_threads, 16 * MiB, plain_memcpy); });
  add("per_thread_all_16MiB_nt", "c", "every core its own stream and 2x16 MiB slots, NT stores",
      [=](const Setup& s) { return per_thread_pipelines(s, cores, 16 * MiB, streaming_copy); });
  add("register_64MiB_1reg", "d",
      "cudaHostRegister(ReadOnly) 64 MiB windows, 1 registrar, 4 ahead; DMA from the page cache",
      [](const Setup& s) { return registered_windows(s, 64 * MiB, 4, 1); });
  add("register_256MiB_1reg", "d", "256 MiB windows, 1 registrar, 2 ahead",
      [](const Setup& s) { return registered_windows(s, 256 * MiB, 2, 1); });
  add("register_64MiB_4reg", "d", "64 MiB windows, 4 registrar threads, 8 ahead",
      [](const Setup& s) { return registered_windows(s, 64 * MiB, 8, 4); });
  add("register_256MiB_4reg", "d", "256 MiB windows, 4 registrar threads, 4 ahead",
      [](const Setup& s) { return registered_windows(s, 256 * MiB, 4, 4); });
  add("register_whole_file", "d", "the whole mapping registered at once", registered_whole_file);
  add("pageable_1thread", "e", "cudaMemcpyAsync from the pageable mmap, 64 MiB, one thread",
      [](const Setup& s) { return pageable_h2d(s, 1); });
  add("pageable_8threads", "e", "cudaMemcpyAsync from the pageable mmap, 8 threads x own stream",
      [=](const Setup& s) { return pageable_h2d(s, loader_threads); });
  return list;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

struct Args {
  std::string file;
  double gigabytes = 13.48;
  std::string json = "host_path_bench.json";
  int repeats = 2;
  std::string only;
  std::size_t threads = 0;
};

int run(const Args& args) {
  const std::string why = oomlab::why_not_writable(args.json);
  if (!why.empty()) throw std::invalid_argument("--json " + args.json + ": " + why);
  Setup setup;
  setup.path = args.file;
  setup.cores = args.threads ? args.threads : std::max(1u, std::thread::hardware_concurrency());

  struct stat info {};
  nlohmann::json record;
  if (::stat(args.file.c_str(), &info) != 0) {
    const auto bytes = static_cast<std::size_t>(args.gigabytes * 1e9) / kPage * kPage;
    std::printf("creating %s (%.2f GB) with %zu threads...\n", args.file.c_str(), bytes / 1e9, setup.cores);
    const auto t0 = Clock::now();
    create_file(args.file, bytes, setup.cores);
    record["create_seconds"] = seconds_since(t0);
    std::printf("  written in %.2f s\n", seconds_since(t0));
    if (::stat(args.file.c_str(), &info) != 0) fail_errno("stat " + args.file);
  }
  setup.bytes = static_cast<std::size_t>(info.st_size);
  if (setup.bytes < kPage) throw std::invalid_argument(args.file + " is smaller than a page");
  auto t0 = Clock::now();
  const double resident = make_resident(args.file, setup.bytes, setup.cores);
  std::printf("warm read %.2f s; %.1f %% of the file resident in the page cache\n", seconds_since(t0), 100 * resident);

  cudaDeviceProp prop{};
  OOMLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int read_only_register = 0;
  OOMLAB_CUDA_CHECK(cudaDeviceGetAttribute(&read_only_register, cudaDevAttrHostRegisterReadOnlySupported, 0));
  if (cudaMalloc(reinterpret_cast<void**>(&setup.target.device), setup.bytes) == cudaSuccess) {
    setup.target.device_bytes = setup.bytes;
    setup.target.whole_file = true;
  } else {
    (void)cudaGetLastError();
    setup.target.device_bytes = 1024 * MiB;
    OOMLAB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&setup.target.device), setup.target.device_bytes));
  }
  struct statfs fs {};
  ::statfs(args.file.c_str(), &fs);
  utsname uts{};
  ::uname(&uts);
  record["device"] = prop.name;
  record["file"] = args.file;
  record["file_bytes"] = setup.bytes;
  record["resident_fraction"] = resident;
  record["cores"] = setup.cores;
  record["kernel"] = uts.release;
  record["filesystem_magic"] =
      static_cast<unsigned long>(fs.f_type);  // 0x1021994 = tmpfs, 0xef53 = ext4, 0x58465342 = xfs
  record["transparent_hugepage"] = read_first_line("/sys/kernel/mm/transparent_hugepage/enabled");
  record["host_register_read_only_supported"] = read_only_register;
  std::printf("%s, %zu cores, kernel %s, fs magic 0x%lx, THP %s, read-only register %s, device target %s\n\n",
              prop.name, setup.cores, uts.release, static_cast<unsigned long>(fs.f_type),
              record["transparent_hugepage"].get<std::string>().c_str(), read_only_register ? "yes" : "NO",
              setup.target.whole_file ? "whole file" : "1 GiB ring (not verified)");

  std::printf("%-30s %3s %9s %9s %-8s  %s\n", "strategy", "grp", "best GB/s", "mean s", "check", "details");
  nlohmann::json results = nlohmann::json::array();
  for (const Strategy& strategy : strategies(setup.cores)) {
    if (!args.only.empty() && strategy.name.find(args.only) == std::string::npos) continue;
    if (strategy.group == "d" && !read_only_register) continue;
    nlohmann::json entry = {{"name", strategy.name}, {"group", strategy.group}, {"what", strategy.what}};
    nlohmann::json passes = nlohmann::json::array();
    double best = 0, total = 0;
    std::string check = "-", details;
    try {
      for (int r = 0; r < args.repeats; ++r) {
        OOMLAB_CUDA_CHECK(cudaMemset(setup.target.device, 0, setup.target.device_bytes));
        OOMLAB_CUDA_CHECK(cudaDeviceSynchronize());
        const PassResult pass = strategy.run(setup);
        const double gbps = static_cast<double>(setup.bytes) / 1e9 / pass.seconds;
        nlohmann::json p = {{"seconds", pass.seconds}, {"gb_per_s", gbps}};
        for (const auto& [key, value] : pass.extra) p[key] = value;
        passes.push_back(p);
        best = std::max(best, gbps);
        total += pass.seconds;
        details.clear();
        for (const auto& [key, value] : pass.extra) details += key + "=" + std::to_string(value).substr(0, 6) + " ";
        if (strategy.reads_file) check = verify(setup);
        if (pass.seconds > 6) break;  // keep the whole run near a minute
      }
      entry["best_gb_per_s"] = best;
      entry["mean_seconds"] = total / static_cast<double>(passes.size());
      entry["check"] = check;
      std::printf("%-30s %3s %9.2f %9.3f %-8s  %s\n", strategy.name.c_str(), strategy.group.c_str(), best,
                  total / static_cast<double>(passes.size()), check.c_str(), details.c_str());
    } catch (const std::exception& error) {
      entry["error"] = error.what();
      std::printf("%-30s %3s  FAILED: %s\n", strategy.name.c_str(), strategy.group.c_str(), error.what());
      (void)cudaGetLastError();
    }
    entry["passes"] = passes;
    results.push_back(entry);
    std::fflush(stdout);
  }
  record["results"] = results;
  OOMLAB_CUDA_CHECK(cudaFree(setup.target.device));
  oomlab::write_file_atomically(args.json, record.dump(2) + "\n");
  std::printf("\nwrote %s\n", args.json.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  CLI::App app{"host_path_bench: page cache -> GPU host-path candidates for the 7B checkpoint load"};
  app.add_option("--file", args.file, "the checkpoint-sized file (created when missing)")->required();
  app.add_option("--gigabytes", args.gigabytes, "size of a created file (1 GB = 1e9 B)")
      ->check(CLI::Range(0.001, 10000.0));
  app.add_option("--json", args.json, "where the results go");
  app.add_option("--repeats", args.repeats, "passes per strategy (best is reported)")->check(CLI::Range(1, 100));
  app.add_option("--only", args.only, "run only strategies whose name contains this");
  app.add_option("--threads", args.threads, "cores to use (default: all)");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(args);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "host_path_bench: %s\n", error.what());
    return 1;
  }
}
