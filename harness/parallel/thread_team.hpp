// Host work split across threads: a team that runs job(0) .. job(size() - 1) together, made once
// and reused (no thread start per job). The weights7b loader copies file bytes into its pinned
// ring with one (copy()); the checkpoint generator splits its work with run(), the SR-GAN's
// image maker hands out image rows with for_each().
//
// Why a team of every core for the loader's copy, measured on the H200 machine (16 cores, 13.5 GB bf16 file, warm page
// cache, 64 MiB chunks, scenarios/weights7b/bench/host_path_bench): mmap -> pinned -> device end to end 27 GB/s with 8
// threads started per chunk, 35 GB/s with a persistent team of 8, 50 GB/s with a team of every core (the pinned H2D
// limit: 55 GB/s). One core copies from the page cache at ~4 GB/s.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace oomlab {

class ThreadTeam {
 public:
  // `threads` including the caller's; 0 means one per hardware thread.
  explicit ThreadTeam(std::size_t threads = 0);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  std::size_t size() const { return workers_.size() + 1; }
  // Runs job(0) .. job(size() - 1), job(0) on the calling thread; returns when all are done.
  void run(const std::function<void(std::size_t)>& job);
  // Runs task(0) .. task(count - 1), the threads taking the next index in turn (so a slow task or
  // thread does not leave the others idle); returns when all are done.
  void for_each(std::size_t count, const std::function<void(std::size_t)>& task);
  // memcpy in page-aligned blocks the threads take in turn (small copies stay on the caller).
  void copy(void* dst, const void* src, std::size_t bytes);

 private:
  void loop(std::size_t index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::uint64_t generation_ = 0;
  std::size_t pending_ = 0;
  bool stop_ = false;
};

}  // namespace oomlab
